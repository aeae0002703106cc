"""A whole entry-table match over HTTP, bots polling their views."""

from __future__ import annotations

import asyncio

import pytest

from app.games.bots import HeuristicBot
from tests.helpers import auth
from tests.integration.tables.helpers import (
    FAST_TIMERS,
    balance,
    create_table,
    operator,
    player,
    view,
)

pytestmark = pytest.mark.asyncio


async def test_a_match_from_seat_to_payout(client, settings):
    op = await operator(client, settings)
    players = [await player(client, settings, f"player{i}", 1_000, op) for i in range(4)]
    table = await create_table(client, players[0][1], options={"lives": 2, **FAST_TIMERS})
    for _, token in players:
        response = await client.post(f"/tables/{table['id']}/seat", headers=auth(token))
        assert response.status_code == 201, response.text
    bots: dict[str, HeuristicBot] = {}
    for _ in range(5000):
        current = [await view(client, token, table["id"]) for _, token in players]
        if current[0]["status"] == "finished":
            break
        acted = False
        for (_, token), seen in zip(players, current, strict=True):
            game = seen["game_view"]
            seat = seen["you"]["match_seat"]
            if game is None or seat is None:
                continue
            bot = bots.setdefault(token, HeuristicBot(seat))
            action = bot.act(game)
            if action is None:
                continue
            action.pop("seat", None)
            response = await client.post(
                f"/tables/{table['id']}/actions",
                json={"action_id": f"{seen['step']}-{action['type']}", "action": action},
                headers=auth(token),
            )
            assert response.status_code in (200, 409, 422), response.text
            acted = True
        if not acted:
            await asyncio.sleep(0.03)
    final = await view(client, players[0][1], table["id"])
    assert final["status"] == "finished", final
    winner = final["result"]["winner_user_id"]
    balances = {user_id: await balance(client, token) for user_id, token in players}
    assert balances[winner] == 1_000 - 500 + 1_800
    assert sorted(balances.values()) == [500, 500, 500, 2_300]
