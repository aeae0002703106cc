"""Mandar or correr over HTTP (RULES.md §3): secret decisions, the dealer's count, marra,
one player left, everybody ran."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import assert_error
from tests.integration.tables.scenario import SLOW_TIMERS, expire_timer, start_game

pytestmark = pytest.mark.asyncio

"""Timers that never fire during a test: every move is the test's."""


def of_type(view: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [event for event in view["events"] if event["type"] == kind]


async def test_decisions_stay_secret_until_the_dealer_decides(client, settings):
    game = await start_game(
        client, settings, players=4, dealer=3, options={"lives": 3, **SLOW_TIMERS}
    )
    first = await game.game(0)
    assert first["dealer"] == 3
    assert first["round"]["phase"] == "deciding"
    assert first["round"]["seats"] == [0, 1, 2, 3]
    # who has not decided yet is not public either
    assert first["deadline"]["kind"] == "decision"
    assert "seats" not in first["deadline"]

    # the dealer decides last
    response = await game.post(3, {"type": "decide", "mandar": True})
    assert_error(response, 409, "not_your_turn")

    before = {other: await game.view(other) for other in (1, 2, 3, None)}
    mine = await game.decide(0, True)
    assert mine["game_view"]["round"]["my_decision"] is True
    assert [e["seat"] for e in of_type(mine, "decision_made")] == [0]
    for other in (1, 2, 3, None):
        seen = await game.view(other)
        # not even *that* seat 0 decided: the same view, step and events included
        assert seen == before[other], other
        round_ = seen["game_view"]["round"]
        assert round_["decisions"] is None
        assert round_["players"] is None
        assert round_.get("my_decision") is None
        assert "mandar_count" not in round_
        assert of_type(seen, "decision_made") == [], other

    await game.decide(1, False)
    await game.decide(2, True)

    # the dealer sees how many chose mandar, and nothing else
    dealer = await game.view(3)
    round_ = dealer["game_view"]["round"]
    assert round_["phase"] == "dealer_deciding"
    assert round_["mandar_count"] == 2
    assert round_["decisions"] is None and round_["players"] is None
    assert round_["my_decision"] is None
    assert [e["mandar_count"] for e in of_type(dealer, "dealer_decision_started")] == [2]
    assert of_type(dealer, "decision_made") == []
    assert dealer["game_view"]["deadline"]["seats"] == [3]
    for other in (0, 1, 2, None):
        seen = await game.view(other)
        round_ = seen["game_view"]["round"]
        assert "mandar_count" not in round_
        assert round_["decisions"] is None
        started = of_type(seen, "dealer_decision_started")
        assert len(started) == 1 and "mandar_count" not in started[0]
        assert [e["seat"] for e in of_type(seen, "decision_made")] == ([2] if other == 2 else [])
    assert (await game.game(1))["round"]["my_decision"] is False

    await game.decide(3, True)
    for seat in (0, 1, 2, 3, None):
        seen = await game.view(seat)
        round_ = seen["game_view"]["round"]
        assert round_["decisions"] == [[0, True], [1, False], [2, True], [3, True]]
        assert round_["players"] == [0, 2, 3]
        assert round_["phase"] == "draw" and round_["turn"] == 0
        (revealed,) = of_type(seen, "decisions_revealed")
        assert revealed["mandar"] == [0, 2, 3]
        assert revealed["ran"] == [1]
        assert revealed["by_timeout"] == []


async def test_marra_cannot_run_and_its_timeout_means_mandar(client, settings):
    # a minute to decide, ended by the test (expire_timer) once it has looked: 2.5 s ran out
    # under a slow machine while the test was still checking the refused decision
    timers = {"decision_timeout_ms": 60_000, "turn_timeout_ms": 60_000, "claim_window_ms": 60_000}
    game = await start_game(client, settings, players=3, dealer=2, options={"lives": 2, **timers})
    # round 1: two players run, the dealer plays alone and wins the round
    await game.decide(0, False)
    await game.decide(1, False)
    await game.decide(2, True)
    first = await game.game(0)
    assert first["round_number"] == 2
    assert first["lives"] == [1, 1, 2]
    for seat in (0, 1, 2, None):
        assert (await game.game(seat))["marra"] == [True, True, False]

    # round 2: seat 0 deals; seat 1 (one life) may not run
    assert first["dealer"] == 0 and first["round"]["phase"] == "deciding"
    before = await game.view(1)
    balances = await game.balances()
    response = await game.post(1, {"type": "decide", "mandar": False})
    assert_error(response, 422, "marra_cannot_run")
    after = await game.view(1)
    assert after["step"] == before["step"]
    assert after["game_view"] == before["game_view"]
    assert await game.balances() == balances

    # nobody decides: seat 1's timeout is mandar (marra), seat 2's is correr
    await expire_timer(game)
    dealer = await game.wait_phase("dealer_deciding", seat=0)
    assert dealer["game_view"]["round"]["mandar_count"] == 1
    assert (await game.game(1))["round"]["my_decision"] is True
    assert (await game.game(2))["round"]["my_decision"] is False

    # the dealer is in marra too: correr refused, the timeout plays
    response = await game.post(0, {"type": "decide", "mandar": False})
    assert_error(response, 422, "marra_cannot_run")
    await expire_timer(game)
    played = await game.wait_phase("draw", seat=None)
    round_ = played["game_view"]["round"]
    assert round_["decisions"] == [[0, True], [1, True], [2, False]]
    assert round_["players"] == [1, 0]
    assert round_["turn"] == 1
    (revealed,) = of_type(played, "decisions_revealed")
    assert revealed["by_timeout"] == [0, 1, 2]
    assert revealed["mandar"] == [0, 1] and revealed["ran"] == [2]


@pytest.mark.parametrize("lone", [3, 1], ids=["dealer", "non_dealer"])
async def test_all_but_one_ran_the_one_wins_the_round_without_playing(client, settings, lone):
    game = await start_game(
        client, settings, players=4, dealer=3, options={"lives": 3, **SLOW_TIMERS}
    )
    for seat in (0, 1, 2):
        await game.decide(seat, seat == lone)
    if lone != 3:
        assert (await game.game(3))["round"]["mandar_count"] == 1
    ended = await game.decide(3, lone == 3)
    (result,) = of_type(ended, "round_ended")
    assert result["round"] == 1
    assert result["result"] == "one_left"
    assert result["winner"] == lone
    assert result["lives_lost"] == [[seat, 0 if seat == lone else 1] for seat in range(4)]
    assert of_type(ended, "turn_started") == []
    for seat in (0, 1, 2, 3, None):
        game_view = await game.game(seat)
        assert game_view["lives"] == [3 if seat_ == lone else 2 for seat_ in range(4)]
        assert game_view["last_result"]["result"] == "one_left"
        assert game_view["last_result"]["winner"] == lone
        # the next round is dealt by the next player
        assert game_view["round_number"] == 2 and game_view["dealer"] == 0
    # nobody drew or discarded a card in round 1
    played = {entry["type"] for entry in await game.log(1) if entry["log"] == "event"}
    assert played.isdisjoint({"turn_started", "drew_stock", "drew_discard", "discarded"})


async def test_everybody_ran_the_round_is_annulled(client, settings):
    game = await start_game(
        client, settings, players=3, dealer=0, options={"lives": 3, **SLOW_TIMERS}
    )
    await game.decide(1, False)
    await game.decide(2, False)
    assert (await game.game(0))["round"]["mandar_count"] == 0
    ended = await game.decide(0, False)
    (result,) = of_type(ended, "round_ended")
    assert result["result"] == "all_ran"
    assert result["winner"] is None
    assert result["lives_lost"] == [[0, 1], [1, 1], [2, 1]]
    game_view = await game.game(None)
    assert game_view["lives"] == [2, 2, 2]
    assert game_view["last_result"]["result"] == "all_ran"
    assert game_view["round_number"] == 2 and game_view["dealer"] == 1
    assert (await game.view(0))["status"] == "running"
