"""Entry limits under concurrent requests: a player's seats at two tables, and a change of the
limit while a seat is being paid, are serialized by the player's limits lock."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from tests.helpers import assert_error, auth, from_threads, until_waiting_on_locks
from tests.integration.tables.helpers import balance, create_table, operator, player
from tests.integration.tables.scenario import concurrently, sql

pytestmark = pytest.mark.asyncio


async def _set(client, token: str, period: str, cents: int | None) -> None:
    response = await client.put(
        f"/players/me/limits/{period}", json={"cents": cents}, headers=auth(token)
    )
    assert response.status_code == 200, response.text


async def _seats(settings, user_id: str) -> int:
    rows = await sql(
        settings, "SELECT count(*) FROM game.seats WHERE user_id = :user", user=uuid.UUID(user_id)
    )
    return int(rows[0][0])


def _one_seat_and_one_refusal(responses) -> None:
    assert sorted(response.status_code for response in responses) == [201, 409], [
        response.text for response in responses
    ]
    refused = next(response for response in responses if response.status_code == 409)
    details = assert_error(refused, 409, "entry_limit_reached")["details"]
    assert details == {"period": "day", "limit_cents": 500, "used_cents": 300, "entry_cents": 300}


async def test_two_seats_at_two_tables_held_back_together_pass_the_limit_once(client, settings):
    # Both seats wait together (the two tables' rows are held), then go at once: each alone is
    # within the limit (300 of 500), both are not.  The second must see the first's entry.
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 10_000, op)
    await _set(client, ana, "day", 500)
    tables = [await create_table(client, op, entry_cents=300) for _ in range(2)]
    holder = await asyncpg.connect(settings.database_url)
    try:
        held = holder.transaction()
        await held.start()
        await holder.execute(
            "SELECT 1 FROM game.tables WHERE id = ANY($1::uuid[]) FOR UPDATE",
            [uuid.UUID(table["id"]) for table in tables],
        )
        loop = asyncio.get_running_loop()
        with from_threads(client) as (sync, pool):
            pending = [
                loop.run_in_executor(
                    pool,
                    lambda table_id=table["id"]: sync.post(
                        f"/tables/{table_id}/seat", headers=auth(ana)
                    ),
                )
                for table in tables
            ]
            await until_waiting_on_locks(holder, 2)
            await held.rollback()
            responses = [await response for response in pending]
    finally:
        await holder.close()
    _one_seat_and_one_refusal(responses)
    assert await balance(client, ana) == 10_000 - 300  # debited once
    assert await _seats(settings, ana_id) == 1


async def test_two_seats_sent_at_once_pass_the_limit_once(client, settings):
    op = await operator(client, settings)
    bia_id, bia = await player(client, settings, "bia", 10_000, op)
    await _set(client, bia, "day", 500)
    tables = [await create_table(client, op, entry_cents=300) for _ in range(2)]
    responses = await concurrently(
        client, [(f"/tables/{table['id']}/seat", None, bia) for table in tables]
    )
    _one_seat_and_one_refusal(responses)
    assert await balance(client, bia) == 10_000 - 300
    assert await _seats(settings, bia_id) == 1


async def test_a_limit_changed_while_a_seat_is_paid_waits_for_it_and_counts_it(client, settings):
    # The seat holds the player's limits lock while it waits for its table (held here); the
    # tightening asked meanwhile waits for the seat, then answers with its entry counted,
    # instead of answering "600 left" while a seat it did not see commits past it.
    op = await operator(client, settings)
    cid_id, cid = await player(client, settings, "cid", 10_000, op)
    await _set(client, cid, "day", 1_000)
    table = await create_table(client, op, entry_cents=600)
    holder = await asyncpg.connect(settings.database_url)
    try:
        held = holder.transaction()
        await held.start()
        await holder.execute(
            "SELECT 1 FROM game.tables WHERE id = $1 FOR UPDATE", uuid.UUID(table["id"])
        )
        loop = asyncio.get_running_loop()
        with from_threads(client) as (sync, pool):
            seating = loop.run_in_executor(
                pool, lambda: sync.post(f"/tables/{table['id']}/seat", headers=auth(cid))
            )
            await until_waiting_on_locks(holder, 1)
            changing = loop.run_in_executor(
                pool,
                lambda: sync.put("/players/me/limits/day", json={"cents": 500}, headers=auth(cid)),
            )
            await until_waiting_on_locks(holder, 2)  # the change waits for the seat
            await held.rollback()
            seated, changed = await seating, await changing
    finally:
        await holder.close()
    assert seated.status_code == 201, seated.text
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert (body["limit_cents"], body["used_cents"], body["remaining_cents"]) == (500, 600, 0)
    assert await _seats(settings, cid_id) == 1
