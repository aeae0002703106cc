"""Who and what the round searches and a player's hand history include, each filter broken
alone: a player who left a table before its start played none of its rounds (their history
must not show a seat's cards), a round in play is in nobody's history, and compliance's search
by player, table and start time."""

from __future__ import annotations

import pytest

from tests.helpers import auth
from tests.integration.compliance.helpers import play_match, staff
from tests.integration.tables.helpers import (
    FAST_TIMERS,
    create_table,
    operator,
    play_to_the_end,
    player,
)
from tests.integration.tables.scenario import start_game

pytestmark = pytest.mark.asyncio


async def _get(client, token: str, url: str) -> list[dict]:
    response = await client.get(url, headers=auth(token))
    assert response.status_code == 200, response.text
    return list(response.json())


async def test_a_player_who_left_before_the_start_has_no_hand_of_that_table(client, settings):
    op = await operator(client, settings)
    leaver_id, leaver = await player(client, settings, "leaver", 1_000, op)
    seated = [await player(client, settings, f"player{i}", 1_000, op) for i in range(2)]
    table = await create_table(
        client, seated[0][1], seat_count=2, options={"lives": 1, **FAST_TIMERS}
    )
    url = f"/tables/{table['id']}"
    assert (await client.post(f"{url}/seat", headers=auth(leaver))).status_code == 201
    assert (await client.post(f"{url}/leave", headers=auth(leaver))).status_code < 300
    for _, token in seated:
        assert (await client.post(f"{url}/seat", headers=auth(token))).status_code == 201
    await play_to_the_end(client, table["id"], [token for _, token in seated])
    assert await _get(client, leaver, "/players/me/hands?limit=50") == []
    auditor = await staff(client, settings)
    assert await _get(client, auditor, f"/compliance/rounds?player={leaver_id}") == []
    # (the players themselves do have them)
    assert await _get(client, seated[0][1], "/players/me/hands?limit=50")
    rounds = await _get(client, auditor, f"/compliance/rounds?player={seated[0][0]}")
    assert rounds
    players = [{"seat": seat, "user_id": user_id} for seat, (user_id, _) in enumerate(seated)]
    assert all(item["players"] == players for item in rounds)


async def test_a_round_in_play_is_in_nobodys_hand_history(client, settings):
    game = await start_game(client, settings, players=2)
    for _, token in game.players:
        assert await _get(client, token, "/players/me/hands") == []


async def test_the_search_by_table_and_by_start_time(client, settings):
    first = await play_match(client, settings, players=2, lives=1)
    second = await play_match(
        client, settings, players=2, lives=1, names="other", operator_token=first["operator"]
    )
    auditor = await staff(client, settings)
    everything = await _get(client, auditor, "/compliance/rounds?limit=200")
    for match in (first, second):
        found = await _get(client, auditor, f"/compliance/rounds?table={match['table_id']}")
        assert found
        assert {item["table_id"] for item in found} == {match["table_id"]}
        assert len(found) == sum(item["table_id"] == match["table_id"] for item in everything)
    # ``from`` includes a round started at that very moment; ``to`` excludes it
    oldest = everything[-1]
    at = oldest["started_at"].replace("+00:00", "Z")
    since = await _get(client, auditor, f"/compliance/rounds?limit=200&from={at}")
    assert [item["round_id"] for item in since] == [item["round_id"] for item in everything]
    until = await _get(client, auditor, f"/compliance/rounds?limit=200&to={at}")
    assert oldest["round_id"] not in {item["round_id"] for item in until}
