"""Entry-table money over HTTP (PRODUCT.md): seats paid when taken, refunds when a table never
starts, refused seats that change nothing, and the fee snapshot taken at creation."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.helpers import assert_error, auth
from tests.integration.tables.helpers import balance, create_table, operator, player, view
from tests.integration.tables.scenario import Game, cards, concurrently, sql, start_game

pytestmark = pytest.mark.asyncio

ENTRY = 500


async def account(client: Any, op: str, kind: str, owner: str | None = None) -> dict[str, Any]:
    """The one ledger account of ``kind`` (and owner), as operators see it."""
    params = {"type": kind, **({"owner_id": owner} if owner else {})}
    response = await client.get("/admin/accounts", params=params, headers=auth(op))
    assert response.status_code == 200, response.text
    (found,) = response.json()
    return dict(found)


async def seat(client: Any, token: str, table_id: str) -> Any:
    return await client.post(f"/tables/{table_id}/seat", headers=auth(token))


async def leave(client: Any, token: str, table_id: str) -> Any:
    return await client.post(f"/tables/{table_id}/leave", headers=auth(token))


async def cancel(client: Any, token: str, table_id: str) -> Any:
    return await client.post(f"/tables/{table_id}/cancel", headers=auth(token))


async def statement_size(client: Any, token: str) -> int:
    response = await client.get("/wallet/statement", params={"limit": 200}, headers=auth(token))
    assert response.status_code == 200, response.text
    return len(response.json()["lines"])


async def seat_rows(settings: Any, table_id: str, user_id: str) -> int:
    rows = await sql(
        settings,
        "SELECT count(*) FROM game.seats WHERE table_id = :table AND user_id = :user",
        table=uuid.UUID(table_id),
        user=uuid.UUID(user_id),
    )
    return int(rows[0][0])


async def people(client: Any, settings: Any, count: int, deposit: int = 1_000):
    op = await operator(client, settings)
    return op, [await player(client, settings, f"player{i}", deposit, op) for i in range(count)]


# --- refunds -----------------------------------------------------------------------------------
async def test_leaving_before_the_start_refunds_exactly_the_entry(client, settings):
    op, [(_, a), (b_id, b)] = await people(client, settings, 2)
    table = await create_table(client, a, seat_count=3, entry_cents=ENTRY)
    for token in (a, b):
        assert (await seat(client, token, table["id"])).status_code == 201
    assert await balance(client, b) == 1_000 - ENTRY
    escrow = await account(client, op, "table_escrow", table["id"])
    assert escrow["balance_cents"] == 2 * ENTRY

    response = await client.post(f"/tables/{table['id']}/leave", headers=auth(b))
    assert response.status_code == 200, response.text
    assert response.json()["seated"] == 1 and response.json()["pool_cents"] == ENTRY
    assert await balance(client, b) == 1_000
    assert (await account(client, op, "table_escrow", table["id"]))["balance_cents"] == ENTRY
    lines = (await client.get("/wallet/statement", headers=auth(b))).json()["lines"]
    assert [line["amount_cents"] for line in lines[:2]] == [ENTRY, -ENTRY]
    assert_error(
        await client.post(f"/tables/{table['id']}/leave", headers=auth(b)), 409, "not_seated"
    )
    assert await balance(client, b) == 1_000
    # the seat can be taken again (and paid again)
    assert (await seat(client, b, table["id"])).status_code == 201
    assert await balance(client, b) == 1_000 - ENTRY
    assert await seat_rows(settings, table["id"], b_id) == 2


async def test_the_fill_deadline_cancels_and_refunds_everyone(client, settings):
    op, [(_, a), (_, b), (_, c)] = await people(client, settings, 3)
    table = await create_table(client, a, seat_count=3, entry_cents=ENTRY, fill_deadline_s=10)
    for token in (a, b):
        assert (await seat(client, token, table["id"])).status_code == 201
    # the deadline is a row: bring it forward instead of waiting ten seconds
    await sql(
        settings,
        "UPDATE game.deadlines SET due_at = now() - interval '1 second'"
        " WHERE table_id = :table AND kind = 'fill'",
        table=uuid.UUID(table["id"]),
    )
    game = Game(client, settings, table["id"], [], op, c)
    cancelled = await game.wait(lambda v: v["status"] == "cancelled", seat=None)
    assert cancelled["result"] == {"reason": "fill_deadline"}
    assert cancelled["seated"] == 0
    assert [await balance(client, token) for token in (a, b, c)] == [1_000, 1_000, 1_000]
    escrow = await account(client, op, "table_escrow", table["id"])
    assert escrow["balance_cents"] == 0 and escrow["closed_at"] is not None
    assert_error(await seat(client, c, table["id"]), 409, "table_closed")
    assert await balance(client, c) == 1_000


async def test_a_table_past_its_fill_deadline_takes_no_seat_and_does_not_start(client, settings):
    """PRODUCT.md: a table that does not fill before its deadline is refunded.  Until the
    deadline's timer runs (a lagging scheduler, a handler waiting to retry), the table is
    still open: a seat there paid an entry, and the last seat or the creator started a match
    the rules had ended."""
    op, [(_, a), (_, b), (c_id, c)] = await people(client, settings, 3)
    table = await create_table(client, a, seat_count=3, entry_cents=ENTRY, fill_deadline_s=600)
    for token in (a, b):
        assert (await seat(client, token, table["id"])).status_code == 201
    # the deadline has passed; its timer has not run yet
    await sql(
        settings,
        "UPDATE game.tables SET fill_deadline_at = now() - interval '1 second' WHERE id = :table",
        table=uuid.UUID(table["id"]),
    )
    before = await view(client, a, table["id"])
    assert_error(await seat(client, c, table["id"]), 409, "fill_deadline_passed")
    assert_error(
        await client.post(f"/tables/{table['id']}/start", headers=auth(a)),
        409,
        "fill_deadline_passed",
    )
    assert await view(client, a, table["id"]) == before
    assert before["status"] == "open" and before["seated"] == 2
    assert [await balance(client, token) for token in (a, b, c)] == [500, 500, 1_000]
    assert await seat_rows(settings, table["id"], c_id) == 0
    assert (await account(client, op, "table_escrow", table["id"]))["balance_cents"] == 2 * ENTRY
    # leaving (or cancelling) is still possible: it refunds, as the deadline will
    assert (await leave(client, b, table["id"])).status_code == 200
    assert await balance(client, b) == 1_000


@pytest.mark.parametrize("by", ["creator", "operator"])
async def test_cancelling_an_open_table_refunds_everyone(client, settings, by):
    op, [(_, a), (_, b)] = await people(client, settings, 2)
    table = await create_table(client, a, seat_count=3, entry_cents=ENTRY)
    for token in (a, b):
        assert (await seat(client, token, table["id"])).status_code == 201
    canceller = a if by == "creator" else op
    response = await client.post(
        f"/tables/{table['id']}/cancel", json={"reason": f"by {by}"}, headers=auth(canceller)
    )
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "cancelled"
    assert response.json()["result"] == {"reason": f"by {by}"}
    assert [await balance(client, token) for token in (a, b)] == [1_000, 1_000]
    escrow = await account(client, op, "table_escrow", table["id"])
    assert escrow["balance_cents"] == 0 and escrow["closed_at"] is not None
    assert_error(
        await client.post(f"/tables/{table['id']}/cancel", headers=auth(canceller)),
        409,
        "table_closed",
    )


async def test_concurrent_cancellations_of_tables_sharing_players_refund_everyone(client, settings):
    # Each cancellation refunds its seats one transfer at a time; with the players seated in
    # opposite orders, refunding in seat order locked their wallets in opposite orders and
    # PostgreSQL broke the deadlock by failing one cancellation with a 500.
    op, players = await people(client, settings, 3, deposit=10_000)
    _, creator = await player(client, settings, "creator", 0, op)
    for _ in range(4):
        first = await create_table(client, creator, seat_count=4, entry_cents=ENTRY)
        second = await create_table(client, creator, seat_count=4, entry_cents=ENTRY)
        for (_, token), (_, other) in zip(players, reversed(players), strict=True):
            assert (await seat(client, token, first["id"])).status_code == 201
            assert (await seat(client, other, second["id"])).status_code == 201
        responses = await concurrently(
            client,
            [(f"/tables/{table['id']}/cancel", {}, op) for table in (first, second)],
        )
        assert [r.status_code for r in responses] == [200, 200], [r.text for r in responses]
        assert [await balance(client, token) for _, token in players] == [10_000] * 3
        for table in (first, second):
            escrow = await account(client, op, "table_escrow", table["id"])
            assert escrow["balance_cents"] == 0 and escrow["closed_at"] is not None


async def test_withdrawals_racing_seats_never_overdraw_the_wallet(client, settings):
    """The wallet pays for two of six: three seats and three withdrawals of one entry each,
    all at once; exactly two succeed, the others are refused and write nothing."""
    op, [(payer_id, payer)] = await people(client, settings, 1, deposit=2 * ENTRY)
    _, creator = await player(client, settings, "creator", 0, op)
    tables = [await create_table(client, creator, seat_count=3, entry_cents=ENTRY)
              for _ in range(3)]  # fmt: skip
    withdrawal = f"/admin/wallets/{payer_id}/withdrawals"
    seats = [(f"/tables/{table['id']}/seat", {}, payer) for table in tables]
    withdrawals = [
        (withdrawal, {"amount_cents": ENTRY}, op, {"Idempotency-Key": f"out-{n}"}) for n in range(3)
    ]
    responses = await concurrently(client, seats + withdrawals)
    codes = sorted(response.status_code for response in responses)
    assert codes == [201, 201, 422, 422, 422, 422], [r.text for r in responses]
    for response in responses:
        if response.status_code == 422:
            assert_error(response, 422, "insufficient_funds")
    assert await balance(client, payer) == 0
    escrows = [(await account(client, op, "table_escrow", t["id"]))["balance_cents"]
               for t in tables]  # fmt: skip
    seated = sum(1 for r in responses[:3] if r.status_code == 201)
    assert sorted(escrows) == sorted([ENTRY] * seated + [0] * (3 - seated))
    assert await statement_size(client, payer) == 1 + 2


async def test_a_cancel_reason_holding_a_nul_character_is_a_400_and_changes_nothing(
    client, settings
):
    """The reason is kept in the table's result (jsonb), which cannot hold U+0000: refused up
    front, not a 500 from PostgreSQL."""
    op, [(_, a), (_, b)] = await people(client, settings, 2)
    table = await create_table(client, a, seat_count=3, entry_cents=ENTRY)
    for token in (a, b):
        assert (await seat(client, token, table["id"])).status_code == 201
    before = await view(client, b, table["id"])
    for canceller in (a, op):
        response = await client.post(
            f"/tables/{table['id']}/cancel", json={"reason": "typo\u0000"}, headers=auth(canceller)
        )
        assert_error(response, 400, "validation_error")
    assert await view(client, b, table["id"]) == before
    assert [await balance(client, token) for token in (a, b)] == [500, 500]
    assert (await account(client, op, "table_escrow", table["id"]))["balance_cents"] == 2 * ENTRY


async def test_a_player_who_did_not_create_the_table_cannot_cancel_it(client, settings):
    _, [(_, a), (_, b)] = await people(client, settings, 2)
    table = await create_table(client, a, seat_count=3, entry_cents=ENTRY)
    for token in (a, b):
        assert (await seat(client, token, table["id"])).status_code == 201
    before = await view(client, b, table["id"])
    response = await client.post(f"/tables/{table['id']}/cancel", headers=auth(b))
    assert_error(response, 403, "not_creator")
    assert await view(client, b, table["id"]) == before
    assert [await balance(client, token) for token in (a, b)] == [500, 500]


async def test_leaving_or_cancelling_after_the_start_is_refused(client, settings):
    _, [(_, a), (_, b), (_, c)] = await people(client, settings, 3)
    table = await create_table(client, a, seat_count=4, entry_cents=ENTRY)
    for token in (a, b, c):
        assert (await seat(client, token, table["id"])).status_code == 201
    started = await client.post(f"/tables/{table['id']}/start", headers=auth(a))
    assert started.status_code == 200, started.text
    assert started.json()["status"] == "running"
    assert started.json()["pool_cents"] == 3 * ENTRY
    before = await view(client, b, table["id"])
    assert_error(
        await client.post(f"/tables/{table['id']}/leave", headers=auth(b)), 409, "table_started"
    )
    assert_error(
        await client.post(f"/tables/{table['id']}/cancel", headers=auth(a)), 409, "table_started"
    )
    assert await view(client, b, table["id"]) == before
    assert [await balance(client, token) for token in (a, b, c)] == [500, 500, 500]


# --- refused seats -------------------------------------------------------------------------------
async def test_a_seat_without_the_money_is_refused_and_writes_nothing(client, settings):
    op, [(_, a), (poor_id, poor)] = await people(client, settings, 2)
    response = await client.post(
        f"/admin/wallets/{poor_id}/withdrawals",
        json={"amount_cents": 601},
        headers={**auth(op), "Idempotency-Key": "poor"},
    )
    assert response.status_code == 201, response.text
    table = await create_table(client, a, seat_count=3, entry_cents=ENTRY)
    assert (await seat(client, a, table["id"])).status_code == 201
    before = await view(client, a, table["id"])
    lines = await statement_size(client, poor)
    assert_error(await seat(client, poor, table["id"]), 422, "insufficient_funds")
    assert await balance(client, poor) == 399
    assert await statement_size(client, poor) == lines
    assert await seat_rows(settings, table["id"], poor_id) == 0
    assert await view(client, a, table["id"]) == before
    assert (await account(client, op, "table_escrow", table["id"]))["balance_cents"] == ENTRY


async def test_seat_refusals_change_nothing(client, settings):
    op, [(_, a), (_, b), (_, c), (_, d)] = await people(client, settings, 4)
    # already seated (open table)
    table = await create_table(client, a, seat_count=2, entry_cents=ENTRY)
    assert (await seat(client, a, table["id"])).status_code == 201
    before = await view(client, a, table["id"])
    assert_error(await seat(client, a, table["id"]), 409, "already_seated")
    assert await view(client, a, table["id"]) == before
    assert await balance(client, a) == 1_000 - ENTRY

    # full: the last seat started the match
    assert (await seat(client, b, table["id"])).status_code == 201
    before = await view(client, c, table["id"])
    assert before["status"] == "running"
    assert_error(await seat(client, c, table["id"]), 409, "table_full")
    assert_error(await seat(client, a, table["id"]), 409, "already_seated")
    assert await view(client, c, table["id"]) == before
    assert [await balance(client, t) for t in (a, b, c)] == [500, 500, 1_000]

    # started early by its creator with free seats left
    early = await create_table(client, c, seat_count=4, entry_cents=ENTRY)
    for token in (c, d):
        assert (await seat(client, token, early["id"])).status_code == 201
    assert (await client.post(f"/tables/{early['id']}/start", headers=auth(c))).status_code == 200
    before = await view(client, b, early["id"])
    assert_error(await seat(client, b, early["id"]), 409, "table_started")
    assert await view(client, b, early["id"]) == before
    assert [await balance(client, t) for t in (a, b, c, d)] == [500, 500, 500, 500]
    assert (await account(client, op, "table_escrow", early["id"]))["balance_cents"] == 2 * ENTRY


# --- the fee snapshot ----------------------------------------------------------------------------
async def test_a_fee_change_applies_to_new_tables_only(client, settings):
    hands = {
        0: ["2C", "3C", "4C", "5H", "6H", "7H", "9S", "9H", "QD"],  # closes with 9C
        1: ["4H", "8H", "JD", "KC", "10S", "3D", "7S", "QS", "KH"],
        2: ["9C", "2D", "5S", "8S", "JS", "3H", "QC", "6D", "10D"],
        3: ["2H", "6C", "9D", "QH", "4D", "8D", "5H", "10C", "3C"],
    }
    timers = {"decision_timeout_ms": 60_000, "turn_timeout_ms": 60_000, "claim_window_ms": 100}
    # one life each: whoever closes first wins the match
    old = await start_game(
        client,
        settings,
        players=4,
        dealer=3,
        hands=hands,
        stock=["9C"],
        options={"lives": 1, **timers},
    )
    op = old.operator
    assert (await client.get("/fee-rate", headers=auth(op))).json()["fee_bps"] == 1_000

    changed = await client.post(
        "/admin/fee-rates", json={"fee_bps": 2_000, "reason": "test"}, headers=auth(op)
    )
    assert changed.status_code == 201, changed.text
    assert (await client.get("/fee-rate", headers=auth(op))).json()["fee_bps"] == 2_000
    history = (await client.get("/admin/fee-rates", headers=auth(op))).json()
    assert [rate["fee_bps"] for rate in history] == [2_000, 1_000]

    _, late = await player(client, settings, "latecomer", 1_000, op)
    new = await create_table(client, late, seat_count=4, entry_cents=ENTRY)
    assert new["fee_bps"] == 2_000
    assert (await seat(client, late, new["id"])).status_code == 201

    listed = {t["id"]: t for t in (await client.get("/tables", headers=auth(late))).json()}
    assert {key: listed[old.id][key] for key in MONEY} == {
        "entry_cents": 500,
        "seated": 4,
        "fee_bps": 1_000,
        "pool_cents": 2_000,
        "fee_cents": 200,
        "net_prize_cents": 1_800,
        "net_prize_if_full_cents": 1_800,
    }
    assert {key: listed[new["id"]][key] for key in MONEY} == {
        "entry_cents": 500,
        "seated": 1,
        "fee_bps": 2_000,
        "pool_cents": 500,
        "fee_cents": 100,
        "net_prize_cents": 400,
        "net_prize_if_full_cents": 1_600,
    }
    assert (await old.view(0))["fee_bps"] == 1_000

    # the old table plays to its end and pays at its own snapshot
    for seat_ in range(4):
        await old.decide(seat_, True)
    await old.act(0, "draw_stock")
    closed = await old.act(0, "close")
    assert closed["status"] == "finished"
    assert closed["result"]["winner_user_id"] == old.user(0)
    assert closed["result"]["pool_cents"] == 2_000
    assert closed["result"]["fee_cents"] == 200
    assert closed["result"]["payouts"] == [{"user_id": old.user(0), "amount_cents": 1_800}]
    assert await old.balances() == [2_300, 500, 500, 500]
    assert await balance(client, late) == 500
    assert (await account(client, op, "house_revenue"))["balance_cents"] == 200
    escrow = await account(client, op, "table_escrow", old.id)
    assert escrow["balance_cents"] == 0 and escrow["closed_at"] is not None
    assert (await account(client, op, "table_escrow", new["id"]))["balance_cents"] == 500
    result = closed["game_view"]["last_result"]
    assert result["result"] == "closed" and result["winner"] == 0
    assert result["out_of_turn"] is False and result["discard"] == cards("QD")[0]


@pytest.mark.parametrize("fee_bps", ["2000", 2_000.0, True])
async def test_a_fee_rate_that_is_not_a_json_integer_is_refused(client, settings, fee_bps):
    op = await operator(client, settings)
    response = await client.post(
        "/admin/fee-rates", json={"fee_bps": fee_bps, "reason": "typo"}, headers=auth(op)
    )
    assert_error(response, 400, "validation_error")
    history = (await client.get("/admin/fee-rates", headers=auth(op))).json()
    assert [rate["fee_bps"] for rate in history] == [1_000]


async def test_a_fee_rate_reason_holding_a_nul_character_is_a_400(client, settings):
    """The reason is a text column, which cannot hold U+0000: refused, not a 500."""
    op = await operator(client, settings)
    response = await client.post(
        "/admin/fee-rates", json={"fee_bps": 2_000, "reason": "typo\u0000"}, headers=auth(op)
    )
    assert_error(response, 400, "validation_error")
    history = (await client.get("/admin/fee-rates", headers=auth(op))).json()
    assert [rate["fee_bps"] for rate in history] == [1_000]


MONEY = (
    "entry_cents",
    "seated",
    "fee_bps",
    "pool_cents",
    "fee_cents",
    "net_prize_cents",
    "net_prize_if_full_cents",
)


async def test_a_free_table_starts_and_finishes_without_moving_money(client, settings):
    hands = {
        0: ["2C", "3C", "4C", "5H", "6H", "7H", "9S", "9H", "QD"],  # closes with 9C
        1: ["4H", "8H", "JD", "KC", "10S", "3D", "7S", "QS", "KH"],
    }
    timers = {"decision_timeout_ms": 60_000, "turn_timeout_ms": 60_000, "claim_window_ms": 100}
    game = await start_game(
        client,
        settings,
        players=2,
        deposit_cents=0,
        entry_cents=0,
        dealer=1,
        hands=hands,
        stock=["9C"],
        options={"lives": 1, **timers},
    )
    await game.decide(0, True)
    await game.decide(1, True)
    await game.act(0, "draw_stock")
    closed = await game.act(0, "close")
    assert closed["status"] == "finished"
    assert closed["result"]["winner_seat"] == 0
    assert closed["result"]["pool_cents"] == 0 and closed["result"]["fee_cents"] == 0
    assert await game.balances() == [0, 0]
    escrow = await account(client, game.operator, "table_escrow", game.id)
    assert escrow["balance_cents"] == 0 and escrow["closed_at"] is not None
