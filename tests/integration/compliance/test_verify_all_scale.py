"""``verify-all`` over ten years of rounds: its reads of the whole history (the finished
tables, the Merkle leaves) go page by page, each statement within the statement timeout (one
statement over every leaf took 6.5 s at 600,000 rounds), with the same findings."""

from __future__ import annotations

import importlib
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text

from app.compliance.audit import _merkle_problems, finished_table_ids, pinned_keys
from app.compliance.checkpoints import make_checkpoint
from app.db import Database

pytestmark = pytest.mark.asyncio

AUDIT = importlib.import_module("app.compliance.audit")

READS = """
SELECT COALESCE(SUM(seq_tup_read), 0) + COALESCE(SUM(idx_tup_fetch), 0)
FROM pg_stat_xact_user_tables WHERE schemaname = 'game' AND relname = 'merkle_leaves'
"""
"""Leaves read so far in the current transaction."""


class Counting:
    """A session that records the leaves each statement read."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.reads: list[int] = []

    async def _counted(self, method: str, statement: Any) -> Any:
        before = int(await self._session.scalar(text(READS)) or 0)
        result = await getattr(self._session, method)(statement)
        self.reads.append(int(await self._session.scalar(text(READS)) or 0) - before)
        return result

    async def execute(self, statement: Any) -> Any:
        return await self._counted("execute", statement)

    async def scalars(self, statement: Any) -> Any:
        return await self._counted("scalars", statement)


@pytest.mark.round_tampering  # synthetic rounds: finished, signed, with no log to replay
async def test_verify_all_reads_the_history_page_by_page(database_url, settings, monkeypatch):
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("SET session_replication_role = replica")  # synthetic rows
        await connection.execute(
            "INSERT INTO game.signing_keys (key_id, algorithm, public_key, created_at)"
            " VALUES ('synthetic', 'ed25519', sha256('k'), now())"
        )
        await connection.execute(
            "INSERT INTO game.rounds (id, table_id, number, rng_round_id, commitment,"
            " rng_version, start_state, start_state_hash, created_at)"
            " SELECT gen_random_uuid(), gen_random_uuid(), 1, gen_random_uuid(),"
            " repeat('0', 64), 'raiz-rng/1', '{}', repeat('0', 64), now()"
            " FROM generate_series(1, 500)"
        )
        for table, values in (
            ("round_results", "id, repeat('0', 64), sha256('x'), 0, '{}', now()"),
            (
                "round_signatures",
                "id, '{}', sha256(id::text::bytea), 'synthetic', "
                "sha512('x'), now() - interval '1 minute'",
            ),
        ):
            await connection.execute(f"INSERT INTO game.{table} SELECT {values} FROM game.rounds")
    finally:
        await connection.close()
    database = Database.connect(database_url, settings)
    monkeypatch.setattr(AUDIT, "ROWS_PER_STATEMENT", 60, raising=False)
    try:
        async with database.session() as session:
            await make_checkpoint(session, settings, origin="cli")
            await session.commit()
        async with database.session() as session:
            tables = await finished_table_ids(session)
            # the plans of a long history (on 500 rows the planner reads them all anyway)
            await session.execute(text("SET LOCAL enable_seqscan = off"))
            counting = Counting(session)
            problems = await _merkle_problems(counting, await pinned_keys(session))  # type: ignore[arg-type]
            await session.rollback()
    finally:
        await database.dispose()
    # pages of 60 tables (at scale each reads its own rounds: bench_scale.py)
    assert len(tables) == 500
    assert tables == sorted(tables)
    assert problems == []
    # pages of 60 leaves, not the 500 of the history in one statement
    assert max(counting.reads) <= 60, counting.reads
