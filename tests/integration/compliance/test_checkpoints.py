"""Checkpoints made at the same moment (several workers at the daily tick, an operator's
request meanwhile): one sequence of leaves, every signed round in it once, every
checkpoint the root of a prefix of it."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from app.compliance.audit import verify_all
from app.compliance.checkpoints import CheckpointJob, make_checkpoint
from app.db import Database
from tests.integration.compliance.helpers import play_match

pytestmark = pytest.mark.asyncio


async def test_concurrent_checkpoints_make_one_consistent_tree(client, settings):
    await play_match(client, settings, players=2, lives=1)
    database = Database.connect(settings.database_url, settings)

    async def on_demand() -> int:
        async with database.session() as session:
            checkpoint, created = await make_checkpoint(session, settings, origin="api")
            await session.commit()
            assert created
            return checkpoint.tree_size

    try:
        jobs = [CheckpointJob(database, settings) for _ in range(3)]
        # three workers at the daily tick make one; then, with the day's checkpoint made,
        # their jobs skip while two on-demand checkpoints are made at the same moment (in
        # one gather, an on-demand checkpoint that won the lock first would make the jobs
        # skip: which comes first is the scheduler's business, not the test's)
        await asyncio.gather(*(job.run() for job in jobs))
        await asyncio.gather(*(job.run() for job in jobs), on_demand(), on_demand())
        audit = await verify_all(database, settings)
    finally:
        await database.dispose()
    assert audit.ok, audit.failures
    connection = await asyncpg.connect(settings.database_url)
    try:
        signed = await connection.fetchval("SELECT count(*) FROM game.round_signatures")
        leaves = await connection.fetch(
            "SELECT leaf_index, round_id FROM game.merkle_leaves ORDER BY leaf_index"
        )
        checkpoints = await connection.fetch(
            "SELECT origin, tree_size FROM game.checkpoints ORDER BY id"
        )
    finally:
        await connection.close()
    assert signed >= 1
    assert [row["leaf_index"] for row in leaves] == list(range(signed))
    assert len({row["round_id"] for row in leaves}) == signed
    assert [row["origin"] for row in checkpoints].count("scheduled") == 1
    assert [row["origin"] for row in checkpoints].count("api") == 2
    assert {row["tree_size"] for row in checkpoints} == {signed}
    assert audit.checkpoints == len(checkpoints) == 3
