"""Real concurrent requests on seats and on the end of a match: whatever order the requests
are served in, no entry is debited twice, no seat exists without its debit nor a debit
without its seat, every escrow holds exactly its seated entries, and a match ends once."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.helpers import assert_error, auth
from tests.integration.tables.helpers import balance, create_table, operator, player
from tests.integration.tables.scenario import concurrently, sql, start_game

pytestmark = pytest.mark.asyncio

ENTRY = 500


async def money_by_table(settings: Any) -> dict[str, tuple[str, int, int, int]]:
    """Every table: status, seats taken, entries paid minus refunded, escrow balance."""
    rows = await sql(
        settings,
        "SELECT t.id, t.status,"
        " (SELECT count(*) FROM game.seats s WHERE s.table_id = t.id AND s.left_at IS NULL),"
        " (SELECT count(*) FROM game.seats s WHERE s.table_id = t.id"
        "   AND s.entry_transfer_id IS NOT NULL AND s.refund_transfer_id IS NULL),"
        " a.balance_cents"
        " FROM game.tables t JOIN ledger.accounts a ON a.owner_id = t.id",
    )
    return {
        str(table): (status, seated, paid, escrow) for table, status, seated, paid, escrow in rows
    }


def assert_escrows_hold_the_seated_entries(tables: dict[str, tuple[str, int, int, int]]) -> None:
    for table, (status, seated, paid, escrow) in tables.items():
        assert seated == paid, (table, status)
        if status in ("open", "running"):
            assert escrow == ENTRY * seated, (table, status, seated, escrow)
        else:  # cancelled: everyone refunded
            assert (seated, escrow) == (0, 0), (table, status)


async def test_the_last_seat_raced_by_joins_a_leave_a_cancel_and_a_start(client, settings):
    op = await operator(client, settings)
    people = [await player(client, settings, f"racer{i}", 10_000, op) for i in range(6)]
    tokens = [token for _, token in people]
    outcomes = set()
    for _ in range(4):
        table = await create_table(client, tokens[0], seat_count=3, entry_cents=ENTRY)
        path = f"/tables/{table['id']}"
        for token in tokens[:2]:
            assert (await client.post(f"{path}/seat", headers=auth(token))).status_code == 201
        requests = [(f"{path}/seat", {}, token) for token in tokens[2:]]
        requests += [(f"{path}/leave", {}, tokens[1]), (f"{path}/cancel", {}, tokens[0])]
        requests += [(f"{path}/start", {}, tokens[0])]
        responses = await concurrently(client, requests)
        for response in responses:
            assert response.status_code in (200, 201, 409, 422), response.text
            if response.status_code == 409:
                assert response.json()["code"] in {"table_full", "table_started", "table_closed"}
        # the start may come after the leave and before any join: one player seated
        if responses[6].status_code == 422:
            assert responses[6].json()["code"] == "not_enough_players"
        assert all(r.status_code != 422 for r in responses[:6])
        outcomes.add(tuple(response.status_code for response in responses))
        tables = await money_by_table(settings)
        assert_escrows_hold_the_seated_entries(tables)
        status, seated, _, _ = tables[table["id"]]
        assert status in ("running", "cancelled") or seated < 3
        # one seat was free, two when the leave came first
        left = responses[4].status_code == 200
        assert sum(r.status_code == 201 for r in responses[:4]) <= 1 + left
    balances = [await balance(client, token) for token in tokens]
    held = sum(escrow for _, _, _, escrow in (await money_by_table(settings)).values())
    assert sum(balances) + held == 6 * 10_000


async def test_one_player_joining_a_table_several_times_at_once_pays_once(client, settings):
    op = await operator(client, settings)
    _, creator = await player(client, settings, "creator", 0, op)
    _, token = await player(client, settings, "eager", 1_000, op)
    table = await create_table(client, creator, seat_count=3, entry_cents=ENTRY)
    responses = await concurrently(client, [(f"/tables/{table['id']}/seat", {}, token)] * 6)
    assert sorted(r.status_code for r in responses) == [201] + [409] * 5
    for response in responses:
        if response.status_code == 409:
            assert_error(response, 409, "already_seated")
    assert await balance(client, token) == 1_000 - ENTRY
    assert_escrows_hold_the_seated_entries(await money_by_table(settings))


async def test_one_player_joining_many_tables_at_once_pays_for_the_seats_they_got(client, settings):
    """The wallet covers two entries of five tables joined at once (the last seat of each
    starts its match): two seats, two debits, three 422s that wrote nothing."""
    op = await operator(client, settings)
    _, creator = await player(client, settings, "creator", 5 * ENTRY, op)
    _, token = await player(client, settings, "greedy", 2 * ENTRY + 100, op)
    tables = [await create_table(client, creator, seat_count=2, entry_cents=ENTRY)
              for _ in range(5)]  # fmt: skip
    for table in tables:
        seated = await client.post(f"/tables/{table['id']}/seat", headers=auth(creator))
        assert seated.status_code == 201, seated.text
    responses = await concurrently(
        client, [(f"/tables/{table['id']}/seat", {}, token) for table in tables]
    )
    assert sorted(r.status_code for r in responses) == [201, 201, 422, 422, 422]
    assert await balance(client, token) == 100
    money = await money_by_table(settings)
    assert_escrows_hold_the_seated_entries(money)
    statuses = sorted(money[table["id"]][0] for table in tables)
    assert statuses == ["open", "open", "open", "running", "running"]


HANDS = {
    0: ["2C", "3C", "4C", "5H", "6H", "7H", "9S", "9H", "QD"],  # closes with 9C
    1: ["4H", "8H", "JD", "KC", "10S", "3D", "7S", "QS", "KH"],
}
TIMERS = {"decision_timeout_ms": 60_000, "turn_timeout_ms": 60_000, "claim_window_ms": 100}


async def test_actions_racing_the_end_of_the_match_apply_once(client, settings):
    """Four closes by the winner (different action ids) and the loser's moves at once: one
    close ends the match and is paid once; every other request is a 409 that wrote nothing;
    afterwards any action is ``table_not_running`` and the log has no gap."""
    game = await start_game(
        client,
        settings,
        players=2,
        dealer=1,
        hands=HANDS,
        stock=["9C"],
        options={"lives": 1, **TIMERS},
    )
    await game.decide(0, True)
    await game.decide(1, True)
    await game.act(0, "draw_stock")
    path = f"/tables/{game.id}/actions"
    requests = [
        (path, {"action_id": f"close-{n}", "action": {"type": "close"}}, game.token(0))
        for n in range(4)
    ]
    requests += [
        (path, {"action_id": f"late-{n}", "action": {"type": "draw_stock"}}, game.token(1))
        for n in range(2)
    ]
    responses = await concurrently(client, requests)
    applied = [r for r in responses if r.status_code == 200]
    assert len(applied) == 1 and applied[0].json()["status"] == "finished"
    for response in responses:
        if response.status_code != 200:
            assert response.status_code == 409, response.text
            assert response.json()["code"] in {"table_not_running", "not_your_turn", "wrong_phase"}
    final = await game.view(None)
    assert final["result"]["payouts"] == [{"user_id": game.user(0), "amount_cents": 900}]
    assert await game.balances() == [1_400, 500]
    settlements = await sql(
        settings,
        "SELECT id FROM ledger.transfers WHERE id LIKE :id ORDER BY id",
        id=f"settle:{game.id}%",
    )
    assert [row[0] for row in settlements] == [
        f"settle:{game.id}/fee",
        f"settle:{game.id}/payout/0",
    ]
    log = await game.log(1)
    assert [e["type"] for e in log if e["log"] == "input"].count("close") == 1
    rows = await sql(
        settings,
        "SELECT l.seq FROM game.round_log l JOIN game.rounds r ON r.id = l.round_id"
        " WHERE r.table_id = :table ORDER BY l.seq",
        table=uuid.UUID(game.id),
    )
    assert [seq for (seq,) in rows] == list(range(1, len(rows) + 1))
    before = await game.view(None)
    for seat, action in ((0, {"type": "draw_stock"}), (1, {"type": "draw_discard"})):
        assert_error(await game.post(seat, action), 409, "table_not_running")
    assert await game.view(None) == before
    assert await game.balances() == [1_400, 500]
