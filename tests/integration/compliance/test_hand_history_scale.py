"""A page of a player's hand history reads the page's rounds only: not every round of their
tables, their logs and the tables' money (a page of one round read a whole match); paging
back by round walks the whole history, from the player's own rounds only."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

from app.compliance.service import ComplianceService
from app.db import Database
from app.rng_api import RngServices
from tests.helpers import assert_error, auth
from tests.integration.compliance.helpers import play_match

pytestmark = pytest.mark.asyncio

READS = """
SELECT COALESCE(SUM(seq_tup_read), 0) + COALESCE(SUM(idx_tup_fetch), 0)
FROM pg_stat_xact_user_tables WHERE relname IN ('round_log', 'entries', 'transfers')
"""
"""Round log entries and ledger rows read so far in the current transaction."""


async def test_a_page_of_hands_reads_its_own_rounds(client, settings):
    match = await play_match(client, settings, players=2, lives=3)
    user_id = uuid.UUID(str(match["players"][0][0]))
    database = Database.connect(settings.database_url, settings)
    try:
        async with database.session() as session:
            service = ComplianceService(
                session, settings, RngServices.from_settings(settings).for_session(session)
            )
            every = await service.hand_history(user_id, limit=50, offset=0)
            rounds = len(every)
            entries = int(
                await session.scalar(
                    text(
                        "SELECT count(*) FROM game.round_log l JOIN game.rounds r"
                        " ON r.id = l.round_id WHERE r.table_id = :table"
                    ),
                    {"table": uuid.UUID(match["table_id"])},
                )
                or 0
            )
            newest = int(
                await session.scalar(
                    text("SELECT count(*) FROM game.round_log WHERE round_id = :round"),
                    {"round": uuid.UUID(every[0]["round_id"])},
                )
                or 0
            )
            # the plans of a long history (on a few rows the planner reads them all anyway)
            await session.execute(text("SET LOCAL enable_seqscan = off"))
            before = int(await session.scalar(text(READS)) or 0)
            page = await service.hand_history(user_id, limit=1, offset=0)
            read = int(await session.scalar(text(READS)) or 0) - before
            await session.rollback()
    finally:
        await database.dispose()
    assert rounds >= 2
    assert page == every[:1]
    assert read <= newest + 5, (read, newest, entries)


async def test_paging_back_by_round_walks_the_history_from_ones_own_rounds_only(client, settings):
    match = await play_match(client, settings, players=2, lives=3)
    other = await play_match(
        client, settings, players=2, lives=1, names="other", operator_token=match["operator"]
    )
    token = match["players"][0][1]
    response = await client.get("/players/me/hands?limit=50", headers=auth(token))
    assert response.status_code == 200, response.text
    every = response.json()
    assert len(every) >= 2
    walked: list[dict] = []
    query = "/players/me/hands?limit=1"
    while True:
        response = await client.get(query, headers=auth(token))
        assert response.status_code == 200, response.text
        if not response.json():
            break
        walked += response.json()
        query = f"/players/me/hands?limit=1&before={walked[-1]['round_id']}"
    assert walked == every
    # a round of a table the player did not play is not a place to page from (nor is none)
    response = await client.get("/players/me/hands?limit=1", headers=auth(other["players"][0][1]))
    foreign = response.json()[0]["round_id"]
    for before in (foreign, str(uuid.uuid4())):
        body = assert_error(
            await client.get(f"/players/me/hands?before={before}", headers=auth(token)),
            404,
            "round_not_found",
        )
        assert body["details"] == {"before": before}
