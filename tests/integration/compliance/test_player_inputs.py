"""A player cannot send the inputs only the server's timers send (the verifier would flag
them: a ``timeout`` or ``abandon_win`` from a user fails the replay's source check)."""

from __future__ import annotations

import pytest

from tests.helpers import assert_error, auth
from tests.integration.tables.helpers import FAST_TIMERS, create_table, operator, player, view

pytestmark = pytest.mark.asyncio


async def test_a_player_cannot_win_by_sending_abandon_win_or_a_timeout(client, settings):
    op = await operator(client, settings)
    seated = [await player(client, settings, f"player{i}", 1_000, op) for i in range(2)]
    table = await create_table(client, seated[0][1], seat_count=2, options=FAST_TIMERS)
    for _, token in seated:
        response = await client.post(f"/tables/{table['id']}/seat", headers=auth(token))
        assert response.status_code == 201, response.text
    for number, action in enumerate(
        ({"type": "abandon_win"}, {"type": "timeout"}, {"type": "claim_window_closed"})
    ):
        response = await client.post(
            f"/tables/{table['id']}/actions",
            json={"action_id": f"cheat-{number}", "action": action},
            headers=auth(seated[0][1]),
        )
        assert_error(response, 400, "unknown_action")
    assert (await view(client, seated[0][1], table["id"]))["status"] == "running"
