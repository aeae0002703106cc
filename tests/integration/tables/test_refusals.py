"""Every refused table request changes nothing: not a balance, a seat, the step, the log, a
deadline, an action id, a presence row nor any view (every row of the table's data is
compared before and after a battery of refused requests, open and running)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.helpers import auth
from tests.integration.tables.helpers import create_table, operator, player
from tests.integration.tables.scenario import SLOW_TIMERS, Game, sql, start_game

pytestmark = pytest.mark.asyncio

STATE = [
    "SELECT * FROM game.tables ORDER BY id",
    "SELECT * FROM game.seats ORDER BY id",
    "SELECT * FROM game.rounds ORDER BY id",
    "SELECT round_id, seq, kind, body, hash FROM game.round_log ORDER BY round_id, seq",
    "SELECT * FROM game.round_results ORDER BY round_id",
    "SELECT * FROM game.deadlines ORDER BY id",
    "SELECT * FROM game.table_actions ORDER BY table_id, user_id, action_id",
    "SELECT * FROM game.presence ORDER BY table_id, user_id",
    "SELECT * FROM game.fee_rates ORDER BY id",
    "SELECT id, balance_cents, version, closed_at FROM ledger.accounts ORDER BY id",
    "SELECT id FROM ledger.transfers ORDER BY id",
]


async def state(settings: Any) -> list[Any]:
    return [await sql(settings, statement) for statement in STATE]


async def refuse_all(client: Any, requests: list[tuple[str, str, Any, str]]) -> None:
    for path, token, body, expected in requests:
        response = await client.post(path, json=body, headers=auth(token))
        assert 400 <= response.status_code < 500, (path, body, response.text)
        assert response.json()["code"] == expected, (path, body, response.text)


async def test_refused_requests_on_an_open_table_change_nothing(client, settings):
    op = await operator(client, settings)
    _, a = await player(client, settings, "alba", 1_000, op)
    _, b = await player(client, settings, "bento", 1_000, op)
    _, poor = await player(client, settings, "pobre", 100, op)
    table = await create_table(client, a, seat_count=3, entry_cents=500)
    path = f"/tables/{table['id']}"
    assert (await client.post(f"{path}/seat", headers=auth(a))).status_code == 201
    before = await state(settings)
    await refuse_all(
        client,
        [
            (f"{path}/seat", a, None, "already_seated"),
            (f"{path}/seat", poor, None, "insufficient_funds"),
            (f"{path}/seat", op, None, "forbidden"),
            (f"{path}/leave", b, None, "not_seated"),
            (f"{path}/start", a, None, "not_enough_players"),
            (f"{path}/start", b, None, "not_creator"),
            (f"{path}/cancel", b, None, "not_creator"),
            (f"{path}/cancel", a, {"reason": 7}, "validation_error"),
            (f"{path}/cancel", a, {"reason": "x" * 201}, "validation_error"),
            (
                f"{path}/actions",
                a,
                {"action_id": "a-1", "action": {"type": "decide"}},
                "table_not_running",
            ),
            (f"{path}/client-seed", a, {"client_seed_hex": "abcd"}, "no_round_pending"),
            (f"{path}/heartbeat", b, None, "not_seated"),
            (f"/tables/{uuid.uuid4()}/seat", b, None, "table_not_found"),
            (f"/tables/{uuid.uuid4()}/cancel", a, None, "table_not_found"),
        ],
    )
    assert await state(settings) == before


async def test_refused_requests_on_a_running_table_change_nothing(client, settings):
    game: Game = await start_game(client, settings, players=3, dealer=2, options=SLOW_TIMERS)
    await game.decide(0, True)
    path = f"/tables/{game.id}"
    before = await state(settings)
    views = {seat: await game.view(seat) for seat in (0, 1, 2, None)}
    actions = f"{path}/actions"
    await refuse_all(
        client,
        [
            (f"{path}/seat", game.spectator, None, "table_full"),
            (f"{path}/seat", game.token(1), None, "already_seated"),
            (f"{path}/leave", game.token(1), None, "table_started"),
            (f"{path}/start", game.token(0), None, "table_started"),
            (f"{path}/cancel", game.operator, None, "table_started"),
            (
                actions,
                game.token(0),
                {"action_id": "s0-1", "action": {"type": "decide", "mandar": False}},
                "idempotency_conflict",
            ),
            (
                actions,
                game.token(0),
                {"action_id": "again", "action": {"type": "decide", "mandar": False}},
                "already_decided",
            ),
            (
                actions,
                game.token(2),
                {"action_id": "early", "action": {"type": "decide", "mandar": True}},
                "not_your_turn",
            ),
            (
                actions,
                game.token(1),
                {"action_id": "d", "action": {"type": "draw_stock"}},
                "wrong_phase",
            ),
            (
                actions,
                game.token(1),
                {"action_id": "t", "action": {"type": "timeout"}},
                "unknown_action",
            ),
            (
                actions,
                game.spectator,
                {"action_id": "w", "action": {"type": "decide", "mandar": True}},
                "not_seated",
            ),
            (
                f"{path}/client-seed",
                game.token(1),
                {"client_seed_hex": "abcd"},
                "client_seeds_closed",
            ),
            (f"{path}/client-seed", game.spectator, {"client_seed_hex": "abcd"}, "not_seated"),
            (f"{path}/heartbeat", game.spectator, None, "not_seated"),
        ],
    )
    assert await state(settings) == before
    for seat, seen in views.items():
        assert await game.view(seat) == seen, seat
