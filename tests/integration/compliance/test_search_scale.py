"""The compliance round search at scale: a page of the newest rounds (or of a time window)
reads its own rows through the start-time index, not every round ever played (a sort of the
whole history per page: seconds after a few hundred thousand rounds, kept ten years)."""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy import text

from app.compliance.service import ComplianceService
from app.db import Database
from app.rng_api import RngServices

pytestmark = pytest.mark.asyncio

READS = """
SELECT COALESCE(SUM(seq_tup_read), 0) + COALESCE(SUM(idx_tup_fetch), 0)
FROM pg_stat_xact_user_tables WHERE schemaname = 'game' AND relname = 'rounds'
"""


async def test_a_search_page_reads_its_rounds_not_the_whole_history(database_url, settings):
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("SET session_replication_role = replica")  # synthetic rows
        await connection.execute(
            "INSERT INTO game.tables (id, game, preset, options, seat_count, entry_cents,"
            " currency, fee_bps, fee_rate_id, creator_id, status, fill_deadline_at,"
            " abandon_after_s, created_at, step, round_number, last_events)"
            " SELECT gen_random_uuid(), 'cacheta', 'cacheta-raiz', '{}', 4, 0, 'BRL', 0, 1,"
            " gen_random_uuid(), 'finished', now(), 60, now(), 0, 3, '[]'"
            " FROM generate_series(1, 200)"
        )
        await connection.execute(
            "INSERT INTO game.rounds (id, table_id, number, rng_round_id, commitment,"
            " rng_version, start_state, start_state_hash, created_at)"
            " SELECT gen_random_uuid(), t.id, n, gen_random_uuid(), repeat('0', 64),"
            " 'raiz-rng/1', '{}', repeat('0', 64),"
            " now() - (row_number() OVER ()) * interval '1 minute'"
            " FROM game.tables t, generate_series(1, 3) n"
        )
        await connection.execute("ANALYZE game.rounds")
        expected = await connection.fetch(
            "SELECT id FROM game.rounds ORDER BY created_at DESC, id LIMIT 20 OFFSET 10"
        )
    finally:
        await connection.close()
    database = Database.connect(database_url, settings)
    try:
        async with database.session() as session:
            # the plans of a long history (on 600 rows the planner reads them all anyway)
            await session.execute(text("SET LOCAL enable_seqscan = off"))
            service = ComplianceService(
                session, settings, RngServices.from_settings(settings).for_session(session)
            )
            before = int(await session.scalar(text(READS)) or 0)
            page = await service.search_rounds(
                player=None, table=None, since=None, until=None, limit=20, offset=10
            )
            read = int(await session.scalar(text(READS)) or 0) - before
            await session.rollback()
    finally:
        await database.dispose()
    assert [item["round_id"] for item in page] == [str(row["id"]) for row in expected]
    assert read <= 60, read
