"""Entry-table money at its edges: the smallest entry is paid and refunded to the centavo, and
the prize a listing shows rounds the fee down exactly as the settlement will."""

from __future__ import annotations

import pytest

from tests.helpers import auth
from tests.integration.tables.helpers import balance, create_table
from tests.integration.tables.test_money import MONEY, account, leave, people, seat

pytestmark = pytest.mark.asyncio


async def listed(client, token: str, table_id: str) -> dict:
    tables = {t["id"]: t for t in (await client.get("/tables", headers=auth(token))).json()}
    return {key: tables[table_id][key] for key in MONEY}


async def test_a_one_centavo_entry_is_paid_and_refunded_to_the_centavo(client, settings):
    op, [(_, a), (_, b)] = await people(client, settings, 2, deposit=1)
    table = await create_table(client, a, seat_count=3, entry_cents=1)
    for token in (a, b):
        assert (await seat(client, token, table["id"])).status_code == 201
        assert await balance(client, token) == 0
    assert (await account(client, op, "table_escrow", table["id"]))["balance_cents"] == 2
    # 2 centavos at 10 %: the fee rounds down to nothing
    assert await listed(client, a, table["id"]) == {
        "entry_cents": 1,
        "seated": 2,
        "fee_bps": 1_000,
        "pool_cents": 2,
        "fee_cents": 0,
        "net_prize_cents": 2,
        "net_prize_if_full_cents": 3,
    }
    assert (await leave(client, b, table["id"])).status_code == 200
    assert await balance(client, b) == 1
    assert (await account(client, op, "table_escrow", table["id"]))["balance_cents"] == 1
    # the listing counts the seats still taken: the one left is no longer in the pool
    shown = await listed(client, a, table["id"])
    assert (shown["seated"], shown["pool_cents"], shown["net_prize_cents"]) == (1, 1, 1)


async def test_the_listed_prize_rounds_the_fee_down_like_the_settlement(client, settings):
    _, players = await people(client, settings, 3)
    table = await create_table(client, players[0][1], seat_count=4, entry_cents=333)
    for _, token in players:
        assert (await seat(client, token, table["id"])).status_code == 201
    # 999 at 10 % is a fee of 99.9, 1,332 of 133.2: the house keeps the whole centavos only
    assert await listed(client, players[0][1], table["id"]) == {
        "entry_cents": 333,
        "seated": 3,
        "fee_bps": 1_000,
        "pool_cents": 999,
        "fee_cents": 99,
        "net_prize_cents": 900,
        "net_prize_if_full_cents": 1_199,
    }
