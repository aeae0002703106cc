"""A round that ended before its deal in a player's hand history (docs/compliance.md, "A
player's own hand history"): the match was abandoned during the round's client-seed window,
so nothing was drawn from its seed and the history offers no verification request for it
(``verify_request: null``, ``verify_unavailable: "not_dealt"``), while the rounds that were
dealt keep theirs, and it verifies.  The deals, the presence sweep and the abandon deadline
are fired by the test (no scheduler in the app)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.helpers import auth
from tests.integration.tables.scenario import (
    SLOW_TIMERS,
    Game,
    add_client_seed,
    clock,
    deals_by_hand,
    heartbeat,
    make_due,
    sql,
    start_game,
)

pytestmark = pytest.mark.asyncio


@pytest.fixture
def settings(database_url):
    return deals_by_hand(database_url)


async def add_seed(game: Game, seat: int, seed_hex: str) -> None:
    response = await add_client_seed(game, game.token(seat), seed_hex)
    assert response.status_code == 204, response.text


async def hands(game: Game, seat: int) -> list[dict[str, Any]]:
    response = await game.client.get("/players/me/hands?limit=50", headers=auth(game.token(seat)))
    assert response.status_code == 200, response.text
    return list(response.json())


async def test_a_round_abandoned_before_its_deal_offers_no_verify_request(client, settings):
    game = await start_game(client, settings, players=3, options={"lives": 3, **SLOW_TIMERS})
    async with clock(settings) as timers:
        # round 1 is dealt (with a client seed) and everybody runs
        await add_seed(game, 0, "a1")
        await make_due(game, "deal")
        assert await timers.runner.run_due() == 1
        dealer = (await game.game(0))["dealer"]
        for seat in [s for s in range(3) if s != dealer] + [dealer]:
            await game.decide(seat, False)

        # round 2 waits for its deal; a client seed comes in, then everybody but seat 0 goes
        # away: the table freezes and is abandoned to seat 0 before the deal
        waiting = await game.view(0)
        assert waiting["round"]["number"] == 2 and waiting["timer"]["kind"] == "deal"
        await add_seed(game, 1, "b2")
        await sql(
            settings,
            "UPDATE game.presence SET last_seen_at = now() - interval '2 hours'"
            " WHERE table_id = :table",
            table=uuid.UUID(game.id),
        )
        await heartbeat(game, 0)
        assert await timers.sweeper.sweep() == 1
        await make_due(game, "abandon")
        assert await timers.runner.run_due() == 1
    final = await game.view(0)
    assert final["status"] == "finished" and final["result"]["reason"] == "abandon"
    assert final["result"]["winner_seat"] == 0
    (deal_draws,) = await sql(
        settings,
        "SELECT count(*) FROM game.round_log l JOIN game.rounds r ON r.id = l.round_id"
        " WHERE r.table_id = :table AND r.number = 2 AND l.kind = 'chance'",
        table=uuid.UUID(game.id),
    )
    assert deal_draws[0] == 0  # round 2 drew nothing from its seed

    for seat in range(3):
        abandoned, played = await hands(game, seat)
        assert (abandoned["number"], played["number"]) == (2, 1)

        # the round that ended before its deal: its seed is revealed, nothing to recompute
        assert abandoned["verify_request"] is None
        assert abandoned["verify_unavailable"] == "not_dealt"
        assert abandoned["seed"] is not None and abandoned["client_seeds"] == ["b2"]
        assert not [event for event in abandoned["events"] if event["type"] == "dealt"]
        assert abandoned["summary"]["result"] == "match_ended"

        # the round that was dealt verifies, and recomputes the player's own hand
        assert played["verify_unavailable"] is None
        request = played["verify_request"]
        assert request["client_seeds"] == ["a1"] and request["player_count"] == 3
        response = await client.post("/rng/verify", json=request)
        assert response.status_code == 200, response.text
        deal = response.json()["deal"]
        assert response.json()["first_dealer"]["seat"] == dealer
        (dealt,) = [event for event in played["events"] if event["type"] == "dealt"]
        position = dealt["seats"].index(seat)
        assert dealt["hand"] == deal[position : 9 * 3 : 3]
