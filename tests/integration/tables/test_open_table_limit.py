"""A player may have only so many tables waiting for players, and create only so many an
hour (operators are not limited): each opens an escrow account the ledger keeps for good.  A
refused creation creates nothing, and concurrent creations cannot all pass the count."""

from __future__ import annotations

import datetime as dt

import asyncpg
import pytest

from tests.conftest import make_settings
from tests.helpers import assert_error, auth, worker_clock_off
from tests.integration.tables.helpers import create_table, operator, player
from tests.integration.tables.scenario import concurrently

pytestmark = pytest.mark.asyncio

LIMIT = 2
PER_HOUR = 5


@pytest.fixture
def settings(database_url):
    return make_settings(
        database_url,
        max_open_tables_per_player=LIMIT,
        max_tables_created_per_hour=PER_HOUR,
        presence_grace_s=3600,
        scheduler_poll_interval_s=0.05,
    )


async def _counts(database_url: str) -> tuple[int, int, int]:
    """Tables, escrow accounts and pending deadlines in the database."""
    connection = await asyncpg.connect(database_url)
    try:
        return (
            await connection.fetchval("SELECT count(*) FROM game.tables"),
            await connection.fetchval(
                "SELECT count(*) FROM ledger.accounts WHERE type = 'table_escrow'"
            ),
            await connection.fetchval("SELECT count(*) FROM game.deadlines"),
        )
    finally:
        await connection.close()


async def test_a_player_has_at_most_the_limit_of_tables_waiting_for_players(client, settings):
    op = await operator(client, settings)
    _, creator = await player(client, settings, "creator", 1_000, op)
    _, second = await player(client, settings, "second", 1_000, op)
    tables = [await create_table(client, creator, seat_count=2) for _ in range(LIMIT)]
    before = await _counts(settings.database_url)
    refused = await client.post(
        "/tables", json={"seat_count": 2, "entry_cents": 500}, headers=auth(creator)
    )
    error = assert_error(refused, 409, "too_many_open_tables")
    assert error["details"] == {"open": LIMIT, "limit": LIMIT}
    assert await _counts(settings.database_url) == before
    # another player, and an operator, are not concerned
    await create_table(client, second, seat_count=2)
    for _ in range(LIMIT + 1):
        await create_table(client, op, seat_count=2)
    # a cancelled table no longer waits ...
    cancel = await client.post(f"/tables/{tables[0]['id']}/cancel", headers=auth(creator))
    assert cancel.status_code == 200, cancel.text
    replacement = await create_table(client, creator, seat_count=2)
    # ... nor does one that started
    for token in (creator, second):
        seat = await client.post(f"/tables/{replacement['id']}/seat", headers=auth(token))
        assert seat.status_code == 201, seat.text
    await create_table(client, creator, seat_count=2)
    assert_error(
        await client.post(
            "/tables", json={"seat_count": 2, "entry_cents": 0}, headers=auth(creator)
        ),
        409,
        "too_many_open_tables",
    )


async def test_concurrent_creations_cannot_outrun_the_limit(client, settings):
    op = await operator(client, settings)
    _, creator = await player(client, settings, "creator", 0, op)
    await create_table(client, creator, seat_count=2, entry_cents=0)
    creations = [("/tables", {"seat_count": 2, "entry_cents": 0}, creator) for _ in range(6)]
    responses = await concurrently(client, creations)
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [201] * (LIMIT - 1) + [409] * (6 - LIMIT + 1), statuses
    tables, escrows, _ = await _counts(settings.database_url)
    assert tables == escrows == LIMIT


async def test_creating_and_cancelling_tables_is_limited_per_hour(client, settings):
    op = await operator(client, settings)
    _, creator = await player(client, settings, "creator", 0, op)
    _, other = await player(client, settings, "other", 0, op)
    for _ in range(PER_HOUR):
        table = await create_table(client, creator, seat_count=2, entry_cents=0)
        cancel = await client.post(f"/tables/{table['id']}/cancel", headers=auth(creator))
        assert cancel.status_code == 200, cancel.text
    before = await _counts(settings.database_url)
    body = {"seat_count": 2, "entry_cents": 0}
    refused = await client.post("/tables", json=body, headers=auth(creator))
    error = assert_error(refused, 429, "too_many_tables_created")
    retry_after_s = error["details"].pop("retry_after_s")
    assert error["details"] == {"created": PER_HOUR, "limit": PER_HOUR}
    assert 3500 < retry_after_s <= 3600
    assert refused.headers["retry-after"] == str(retry_after_s)
    assert await _counts(settings.database_url) == before
    # another player, and an operator, are not concerned
    await create_table(client, other, seat_count=2, entry_cents=0)
    for _ in range(PER_HOUR + 1):
        await create_table(client, op, seat_count=2, entry_cents=0)
    # an hour later the player's oldest creation no longer counts
    connection = await asyncpg.connect(settings.database_url)
    try:
        await connection.execute("SET session_replication_role = replica")  # the guard trigger
        await connection.execute(
            "UPDATE game.tables SET created_at = created_at - interval '1 hour'"
            " WHERE id = (SELECT t.id FROM game.tables t JOIN game.users u ON u.id = t.creator_id"
            " WHERE u.username = 'creator' ORDER BY t.created_at LIMIT 1)"
        )
    finally:
        await connection.close()
    await create_table(client, creator, seat_count=2, entry_cents=0)


async def test_a_worker_whose_clock_is_off_counts_the_hour_on_the_database_s_clock(
    client, settings, monkeypatch
):
    # The player's creations were half an hour ago by the database's clock.  An hour ahead, a
    # worker would find none of them in its last hour and let a sixth through; an hour behind,
    # it would tell the player to come back in an hour and a half.
    op = await operator(client, settings)
    _, creator = await player(client, settings, "creator", 0, op)
    for _ in range(PER_HOUR):
        table = await create_table(client, creator, seat_count=2, entry_cents=0)
        cancel = await client.post(f"/tables/{table['id']}/cancel", headers=auth(creator))
        assert cancel.status_code == 200, cancel.text
    connection = await asyncpg.connect(settings.database_url)
    try:
        await connection.execute("SET session_replication_role = replica")  # the guard trigger
        await connection.execute(
            "UPDATE game.tables SET created_at = now() - interval '30 minutes'"
        )
    finally:
        await connection.close()
    body = {"seat_count": 2, "entry_cents": 0}
    for offset in (dt.timedelta(hours=1), -dt.timedelta(hours=1)):
        with monkeypatch.context() as skewed:
            worker_clock_off(skewed, offset)
            refused = await client.post("/tables", json=body, headers=auth(creator))
        error = assert_error(refused, 429, "too_many_tables_created")
        assert 1700 < error["details"]["retry_after_s"] <= 1800, offset
