"""Checkpoints made at the same moment (several workers at the daily tick, an operator's
request meanwhile): one sequence of leaves, every signed round in it once, every
checkpoint the root of a prefix of it."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import asyncpg
import pytest

from app.compliance.audit import verify_all
from app.compliance.checkpoints import CheckpointJob, make_checkpoint
from app.db import Database
from tests.helpers import auth
from tests.integration.compliance.helpers import play_match, raw, staff

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


async def _checkpoint_count(url: str) -> int:
    connection = await asyncpg.connect(url)
    try:
        return int(await connection.fetchval("SELECT count(*) FROM game.checkpoints"))
    finally:
        await connection.close()


async def _age_latest_checkpoint(url: str, by: dt.timedelta) -> None:
    async with raw(url) as connection:
        await connection.execute(
            "UPDATE game.checkpoints SET created_at = created_at - $1::interval "
            "WHERE id = (SELECT max(id) FROM game.checkpoints)",
            by,
        )


async def test_the_periodic_job_signs_again_once_nine_tenths_of_its_interval_have_passed(
    settings,
):
    # (90 %, so a job that runs a little early on the day after still signs that day's)
    interval = dt.timedelta(seconds=settings.checkpoint_interval_s)
    database = Database.connect(settings.database_url, settings)
    try:
        job = CheckpointJob(database, settings)
        await job.run()
        assert await _checkpoint_count(settings.database_url) == 1
        await _age_latest_checkpoint(settings.database_url, interval * 0.85)
        await job.run()
        assert await _checkpoint_count(settings.database_url) == 1
        await _age_latest_checkpoint(settings.database_url, interval * 0.1)  # 95 % old
        await job.run()
        assert await _checkpoint_count(settings.database_url) == 2
    finally:
        await database.dispose()


async def test_a_leaf_appended_after_the_latest_checkpoint_gets_no_proof_from_it(client, settings):
    # A checkpoint committing between the read of the latest checkpoint and the read of the
    # leaves: the new leaf lies beyond the tree that checkpoint signed, so it has no audit
    # path in it (and must not be given one).
    first = await play_match(client, settings, players=2, lives=1)
    database = Database.connect(settings.database_url, settings)
    try:
        async with database.session() as session:
            checkpoint, _ = await make_checkpoint(session, settings, origin="cli")
            await session.commit()
    finally:
        await database.dispose()
    second = await play_match(
        client, settings, players=2, lives=1, names="other", operator_token=first["operator"]
    )
    async with raw(settings.database_url) as connection:
        round_id = await connection.fetchval(
            "SELECT r.id FROM game.rounds r WHERE r.table_id = $1 ORDER BY r.number LIMIT 1",
            uuid.UUID(second["table_id"]),
        )
        await connection.execute(
            "INSERT INTO game.merkle_leaves (leaf_index, round_id, record_hash, added_at) "
            "SELECT $1, round_id, record_hash, now() FROM game.round_signatures "
            "WHERE round_id = $2",
            checkpoint.tree_size,
            round_id,
        )
    token = await staff(client, settings)
    late = await client.get(f"/compliance/rounds/{round_id}/bundle", headers=auth(token))
    assert late.status_code == 200, late.text
    assert [item["inclusion"] for item in late.json()["rounds"]] == [None] * len(
        late.json()["rounds"]
    )
    covered = await client.get(
        f"/compliance/rounds/{await _first_round(settings.database_url, first['table_id'])}/bundle",
        headers=auth(token),
    )
    assert covered.status_code == 200, covered.text
    assert all(item["inclusion"] is not None for item in covered.json()["rounds"])


async def _first_round(url: str, table_id: str) -> uuid.UUID:
    connection = await asyncpg.connect(url)
    try:
        return await connection.fetchval(
            "SELECT id FROM game.rounds WHERE table_id = $1 ORDER BY number LIMIT 1",
            uuid.UUID(table_id),
        )
    finally:
        await connection.close()
