"""The compliance round search at scale: a page of the newest rounds (or of a time window,
or after a round) reads its own rows through the start-time index, not every round ever
played (a sort of the whole history per page: seconds after a few hundred thousand rounds,
kept ten years), and paging back by round neither repeats nor skips one."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text

from app.compliance.service import ComplianceService
from app.db import Database
from app.rng_api import RngServices
from tests.helpers import assert_error, auth
from tests.integration.compliance.helpers import staff
from tests.integration.tables.helpers import operator

pytestmark = pytest.mark.asyncio

READS = """
SELECT COALESCE(SUM(seq_tup_read), 0) + COALESCE(SUM(idx_tup_fetch), 0)
FROM pg_stat_xact_user_tables WHERE schemaname = 'game' AND relname = 'rounds'
"""
ORDER = "ORDER BY created_at DESC, id"
NEW_ROUND = (
    "INSERT INTO game.rounds (id, table_id, number, rng_round_id, commitment,"
    " rng_version, start_state, start_state_hash, created_at)"
    " SELECT gen_random_uuid(), t.id, n, gen_random_uuid(), repeat('0', 64),"
    " 'raiz-rng/1', '{{}}', repeat('0', 64), {created_at}"
    " FROM game.tables t, generate_series({numbers}) n"
)


async def _synthetic_rounds(database_url: str, tables: int) -> list[uuid.UUID]:
    """``tables`` finished tables of three rounds, every three rounds sharing a start time
    (ties are ordered by id); the round ids, newest first."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("SET session_replication_role = replica")  # synthetic rows
        await connection.execute(
            "INSERT INTO game.tables (id, game, preset, options, seat_count, entry_cents,"
            " currency, fee_bps, fee_rate_id, creator_id, status, fill_deadline_at,"
            " abandon_after_s, created_at, step, round_number, last_events)"
            " SELECT gen_random_uuid(), 'cacheta', 'cacheta-raiz', '{}', 4, 0, 'BRL', 0, 1,"
            " gen_random_uuid(), 'finished', now(), 60, now(), 0, 3, '[]'"
            f" FROM generate_series(1, {tables})"
        )
        await connection.execute(
            NEW_ROUND.format(
                created_at="now() - ((row_number() OVER ()) / 3) * interval '1 minute'",
                numbers="1, 3",
            )
        )
        await connection.execute("ANALYZE game.rounds")
        return [row["id"] for row in await connection.fetch(f"SELECT id FROM game.rounds {ORDER}")]
    finally:
        await connection.close()


async def _page_and_reads(settings: Any, **page: Any) -> tuple[list[str], int]:
    """A search page's round ids and the rows of ``game.rounds`` it read."""
    database = Database.connect(settings.database_url, settings)
    try:
        async with database.session() as session:
            # the plans of a long history (on 600 rows the planner reads them all anyway)
            await session.execute(text("SET LOCAL enable_seqscan = off"))
            service = ComplianceService(
                session, settings, RngServices.from_settings(settings).for_session(session)
            )
            before = int(await session.scalar(text(READS)) or 0)
            found = await service.search_rounds(
                player=None, table=None, since=None, until=None, **page
            )
            read = int(await session.scalar(text(READS)) or 0) - before
            await session.rollback()
    finally:
        await database.dispose()
    return [item["round_id"] for item in found], read


async def test_a_search_page_reads_its_rounds_not_the_whole_history(database_url, settings):
    newest_first = await _synthetic_rounds(database_url, 200)
    page, read = await _page_and_reads(settings, limit=20, offset=10)
    assert page == [str(round_id) for round_id in newest_first[10:30]]
    assert read <= 60, read


async def test_a_page_after_a_deep_round_reads_its_rounds_not_the_skipped_ones(
    database_url, settings
):
    newest_first = await _synthetic_rounds(database_url, 200)
    page, read = await _page_and_reads(settings, limit=20, before=newest_first[499])
    assert page == [str(round_id) for round_id in newest_first[500:520]]
    # an offset of 500 reads the 500 rounds it skips
    assert read <= 60, read


async def test_paging_back_by_round_repeats_and_skips_none_while_rounds_start(
    client, database_url, settings
):
    newest_first = await _synthetic_rounds(database_url, 10)
    auditor = await staff(client, settings)
    seen: list[str] = []
    pages_after: list[str | None] = [None]
    while True:
        query = "/compliance/rounds?limit=7"
        if pages_after[-1] is not None:
            query += f"&before={pages_after[-1]}"
        response = await client.get(query, headers=auth(auditor))
        assert response.status_code == 200, response.text
        page = [item["round_id"] for item in response.json()]
        if not page:
            break
        seen += page
        if len(seen) == 7:
            # a round starts between two pages: an offset would show the 7th round again
            connection = await asyncpg.connect(database_url)
            try:
                await connection.execute("SET session_replication_role = replica")
                await connection.execute(NEW_ROUND.format(created_at="now()", numbers="4, 4"))
            finally:
                await connection.close()
        pages_after.append(page[-1])
    assert seen == [str(round_id) for round_id in newest_first]
    response = await client.get("/compliance/rounds?limit=200", headers=auth(auditor))
    assert len(response.json()) == len(newest_first) + 10  # the new rounds are listed first
    response = await client.get("/admin/access-log", headers=auth(await operator(client, settings)))
    searches = [row["details"] for row in reversed(response.json())]
    assert [row["before"] for row in searches] == [*pages_after, None]


async def test_paging_after_an_unknown_round_is_refused(client, database_url, settings):
    await _synthetic_rounds(database_url, 1)
    auditor = await staff(client, settings)
    unknown = uuid.uuid4()
    body = assert_error(
        await client.get(f"/compliance/rounds?before={unknown}", headers=auth(auditor)),
        404,
        "round_not_found",
    )
    assert body["details"] == {"before": str(unknown)}
    assert_error(
        await client.get("/compliance/rounds?before=not-a-round", headers=auth(auditor)),
        400,
        "validation_error",
    )
