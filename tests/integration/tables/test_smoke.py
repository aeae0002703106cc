"""A whole entry-table match over HTTP, bots polling their views."""

from __future__ import annotations

import pytest

from tests.helpers import auth
from tests.integration.tables.helpers import (
    FAST_TIMERS,
    balance,
    create_table,
    operator,
    play_to_the_end,
    player,
)

pytestmark = pytest.mark.asyncio


async def test_a_match_from_seat_to_payout(client, settings):
    op = await operator(client, settings)
    players = [await player(client, settings, f"player{i}", 1_000, op) for i in range(4)]
    table = await create_table(client, players[0][1], options={"lives": 2, **FAST_TIMERS})
    for _, token in players:
        response = await client.post(f"/tables/{table['id']}/seat", headers=auth(token))
        assert response.status_code == 201, response.text
    final = await play_to_the_end(client, table["id"], [token for _, token in players])
    winner = final["result"]["winner_user_id"]
    balances = {user_id: await balance(client, token) for user_id, token in players}
    assert balances[winner] == 1_000 - 500 + 1_800
    assert sorted(balances.values()) == [500, 500, 500, 2_300]
