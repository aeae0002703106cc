"""The queue of signed rounds no checkpoint has appended yet (``game.pending_leaves``,
migration ``compliance_0006``): a checkpoint finds the new rounds there instead of reading
every signature ever made, and appends exactly what the anti-join of every signature against
every leaf found before: also a signature whose transaction committed after a checkpoint it
was signed before, in signing order, each once, no leaf moved."""

from __future__ import annotations

import time
import uuid

import anyio
import asyncpg
import pytest
from alembic import command
from sqlalchemy import text

from app.compliance.checkpoints import make_checkpoint
from app.compliance.merkle import leaf_hash, merkle_root
from app.config import Settings
from app.db import Database
from app.db.migrate import alembic_config
from tests.integration.compliance.helpers import leaves, sign_rounds

pytestmark = pytest.mark.asyncio

READS = """
SELECT COALESCE(SUM(seq_tup_read), 0) + COALESCE(SUM(idx_tup_fetch), 0)
FROM pg_stat_xact_user_tables
WHERE schemaname = 'game' AND relname IN ('round_signatures', 'merkle_leaves')
"""
"""Rows of the signatures and the leaves read so far in the current transaction."""


async def checkpoint(database: Database, settings: Settings) -> tuple[int, bytes]:
    """A new checkpoint's size and root."""
    async with database.session() as session:
        made, created = await make_checkpoint(session, settings, origin="cli")
        await session.commit()
    assert created
    return made.tree_size, bytes(made.root)


async def queued(url: str) -> set[uuid.UUID]:
    connection = await asyncpg.connect(url)
    try:
        return {
            row[0] for row in await connection.fetch("SELECT round_id FROM game.pending_leaves")
        }
    finally:
        await connection.close()


async def signed(url: str) -> list[uuid.UUID]:
    """Every signed round in leaf order (signing time, then round id)."""
    connection = await asyncpg.connect(url)
    try:
        rows = await connection.fetch(
            "SELECT round_id FROM game.round_signatures ORDER BY signed_at, round_id"
        )
    finally:
        await connection.close()
    return [row[0] for row in rows]


async def test_a_signature_committed_after_a_checkpoint_it_predates_is_in_the_next_one(
    database_url, settings
):
    """A long transaction signs a round two hours ago and commits after a checkpoint made an
    hour later: the next checkpoint appends it (before the rounds signed after it), though
    it was signed before the last checkpoint; the first checkpoint's leaves stay where they
    were."""
    database = Database.connect(database_url, settings)
    late = uuid.uuid4()
    held = await asyncpg.connect(database_url)
    try:
        await sign_rounds(database_url, 1, 5)
        transaction = held.transaction()
        await transaction.start()
        # the round row without its table (foreign keys off for it); the signature as the
        # service writes it, the trigger on
        await held.execute("SET LOCAL session_replication_role = replica")
        await held.execute(
            "INSERT INTO game.rounds (id, table_id, number, rng_round_id, commitment, "
            "rng_version, start_state, start_state_hash, created_at) VALUES ($1, "
            "gen_random_uuid(), 1, gen_random_uuid(), repeat('0', 64), 'raiz-rng/1', '{}', "
            "repeat('0', 64), now() - interval '3 hours')",
            late,
        )
        await held.execute("SET LOCAL session_replication_role = origin")
        await held.execute(
            "INSERT INTO game.round_signatures "
            "(round_id, record, record_hash, key_id, signature, signed_at) "
            "VALUES ($1, '{}', sha256('late'), 'synthetic', sha512('late'), "
            "now() - interval '2 hours')",
            late,
        )
        first_size, first_root = await checkpoint(database, settings)
        assert first_size == 5  # the late signature is not committed yet
        await transaction.commit()
        await sign_rounds(database_url, 6, 7)
        assert late in await queued(database_url)
        size, root = await checkpoint(database, settings)
    finally:
        await held.close()
        await database.dispose()
    recorded = await leaves(database_url)
    hashes = [leaf_hash(record) for _, record in recorded]
    everything = await signed(database_url)
    assert everything[0] == late  # signed first of all...
    assert size == 8  # ... appended after rounds 1 to 5, before 6 and 7 (signed after it)
    assert [round_id for round_id, _ in recorded] == [*everything[1:6], late, *everything[6:]]
    assert root == merkle_root(hashes)
    assert first_root == merkle_root(hashes[:5])
    assert await queued(database_url) == set()


async def test_a_checkpoint_reads_the_new_rounds_not_the_history(database_url, settings):
    """With 600 rounds in the tree and 7 signed since, a checkpoint reads a few rows of the
    signatures and the leaves per new round (the new rounds, their leaves, the foreign keys'
    and the queue guard's lookups), not the 600 of the history."""
    database = Database.connect(database_url, settings)
    try:
        await sign_rounds(database_url, 1, 600)
        await checkpoint(database, settings)
        await sign_rounds(database_url, 601, 607)
        async with database.session() as session:
            # the plans of a long history (on 600 rows the planner reads them all anyway)
            await session.execute(text("SET LOCAL enable_seqscan = off"))
            before = int(await session.scalar(text(READS)) or 0)
            made, _ = await make_checkpoint(session, settings, origin="cli")
            read = int(await session.scalar(text(READS)) or 0) - before
            await session.commit()
    finally:
        await database.dispose()
    assert made.tree_size == 607
    assert read <= 6 * 7, read


async def test_a_queued_round_leaves_the_queue_only_as_a_leaf(database_url, settings):
    """The queue's guard refuses every role (the schemas' owner here) a delete of a round
    that is not a leaf yet, any update and a truncation; the checkpoint that appends a
    round deletes its row."""
    await sign_rounds(database_url, 1, 3)
    (round_id, *_) = await signed(database_url)
    connection = await asyncpg.connect(database_url)
    try:
        for statement in (
            "DELETE FROM game.pending_leaves",
            f"DELETE FROM game.pending_leaves WHERE round_id = '{round_id}'",
            "UPDATE game.pending_leaves SET round_id = round_id",
        ):
            with pytest.raises(asyncpg.RaiseError, match="it is not a Merkle leaf yet"):
                await connection.execute(statement)
        with pytest.raises(asyncpg.RaiseError, match="TRUNCATE refused"):
            await connection.execute("TRUNCATE game.pending_leaves")
    finally:
        await connection.close()
    assert len(await queued(database_url)) == 3
    database = Database.connect(database_url, settings)
    try:
        assert (await checkpoint(database, settings))[0] == 3
    finally:
        await database.dispose()
    assert await queued(database_url) == set()


async def test_rounds_an_older_release_appended_are_dropped_from_the_queue_not_appended_again(
    database_url, settings
):
    """During a rolling deploy a checkpoint of the release before the queue appends rounds
    without deleting their rows: the next checkpoint deletes them and appends only the rest,
    after them."""
    database = Database.connect(database_url, settings)
    try:
        await sign_rounds(database_url, 1, 4)
        await checkpoint(database, settings)
        await sign_rounds(database_url, 5, 9)
        connection = await asyncpg.connect(database_url)
        try:  # what the older release's anti-join appends, in its order
            await connection.execute(
                "INSERT INTO game.merkle_leaves (leaf_index, round_id, record_hash, added_at) "
                "SELECT 3 + row_number() OVER (ORDER BY s.signed_at, s.round_id), s.round_id, "
                "s.record_hash, now() FROM game.round_signatures s "
                "WHERE NOT EXISTS (SELECT FROM game.merkle_leaves l WHERE l.round_id = s.round_id)"
            )
        finally:
            await connection.close()
        await sign_rounds(database_url, 10, 11)
        assert len(await queued(database_url)) == 7
        size, root = await checkpoint(database, settings)
    finally:
        await database.dispose()
    recorded = await leaves(database_url)
    assert size == 11
    assert [round_id for round_id, _ in recorded] == await signed(database_url)
    assert root == merkle_root([leaf_hash(record) for _, record in recorded])
    assert await queued(database_url) == set()


async def test_the_migration_queues_every_signature_without_a_leaf(database_url, settings):
    """Upgraded with rounds signed since the last checkpoint, the queue holds exactly those
    (and its trigger fires under ``session_replication_role = replica`` too): the next
    checkpoint appends them as the anti-join did."""
    database = Database.connect(database_url, settings)
    config = alembic_config(database_url)
    try:
        await sign_rounds(database_url, 1, 50)
        await checkpoint(database, settings)
        await anyio.to_thread.run_sync(command.downgrade, config, "compliance_0005")
        await sign_rounds(database_url, 51, 80)  # no queue: signed by the release before it
        await anyio.to_thread.run_sync(command.upgrade, config, "heads")
        connection = await asyncpg.connect(database_url)
        try:
            enabled = await connection.fetchval(
                "SELECT tgenabled FROM pg_trigger "
                "WHERE tgname = 'round_signatures_pending_leaf' AND NOT tgisinternal"
            )
        finally:
            await connection.close()
        assert enabled == b"A"  # ALWAYS: also under session_replication_role = replica
        everything = await signed(database_url)
        assert await queued(database_url) == set(everything[50:])
        await sign_rounds(database_url, 81, 90)
        size, root = await checkpoint(database, settings)
    finally:
        await database.dispose()
    recorded = await leaves(database_url)
    assert size == 90
    assert [round_id for round_id, _ in recorded] == await signed(database_url)
    assert root == merkle_root([leaf_hash(record) for _, record in recorded])
    assert await queued(database_url) == set()


async def test_the_gauges_say_how_many_rounds_wait_for_a_checkpoint_and_since_when(
    database_url, settings
):
    from prometheus_client import REGISTRY

    from app.compliance.checkpoints import CheckpointJob, count_pending_rounds

    def sample(name: str) -> float:
        value = REGISTRY.get_sample_value(name)
        assert value is not None, name
        return value

    database = Database.connect(database_url, settings)
    try:
        CheckpointJob(database, settings)
        assert sample("raiz_checkpoint_interval_seconds") == settings.checkpoint_interval_s
        await sign_rounds(database_url, 1, 3)  # signed an hour ago
        await count_pending_rounds(database)
        assert sample("raiz_checkpoint_pending_rounds") == 3
        age = time.time() - sample("raiz_checkpoint_oldest_pending_timestamp_seconds")
        assert 3590 < age < 3700, age
        await checkpoint(database, settings)
        await count_pending_rounds(database)
        assert sample("raiz_checkpoint_pending_rounds") == 0
        age = time.time() - sample("raiz_checkpoint_oldest_pending_timestamp_seconds")
        assert 0 <= age < 60, age
    finally:
        await database.dispose()
