"""Timeouts in every phase (RULES.md §3), fired by the scheduler: decisions (correr), the
dealer's decision, the draw phase (draw from the stock and discard it), the discard phase
(the card just drawn, or the most recently received unlocked card), the claim window.

Player timers last a minute and the test ends each one it waits out (:func:`expire_timer`):
the scheduler still fires every timeout, but a slow machine cannot let a timer run out
before the test has acted or looked (1.5 s timers did).  ``test_decisions_share_one_timer``
checks that the timer is the table's option."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.integration.tables.scenario import cards, expire_timer, start_game

pytestmark = pytest.mark.asyncio

HANDS = {
    0: ["9C", "2D", "5S", "8S", "JS", "3H", "QC", "6D", "10D"],
    1: ["4H", "8H", "JD", "KC", "10S", "3D", "7S", "QS", "KH"],
    2: ["2H", "6C", "9D", "QH", "4D", "8D", "5H", "10C", "3C"],
}


def of_type(view: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [event for event in view["events"] if event["type"] == kind]


def due(view: dict[str, Any]) -> dt.datetime:
    assert view["timer"] is not None, view
    return dt.datetime.fromisoformat(view["timer"]["due_at"])


async def test_decision_timeouts_mean_correr_for_players_and_dealer(client, settings):
    timers = {"decision_timeout_ms": 60_000, "turn_timeout_ms": 60_000, "claim_window_ms": 60_000}
    game = await start_game(client, settings, players=3, dealer=2, options={"lives": 3, **timers})
    await game.decide(0, True)
    # seat 1 says nothing: its timeout is correr, and the dealer's turn to decide starts
    await expire_timer(game)
    dealer = await game.wait_phase("dealer_deciding", seat=2)
    assert dealer["game_view"]["round"]["mandar_count"] == 1
    silent = await game.view(1)
    assert silent["game_view"]["round"]["my_decision"] is False
    made = of_type(silent, "decision_made")
    assert [(e["seat"], e["mandar"], e["by_timeout"]) for e in made] == [(1, False, True)]
    assert (await game.game(0))["round"]["my_decision"] is True
    # the dealer says nothing either: correr, so seat 0 is the only one left
    await expire_timer(game)
    ended = await game.wait(lambda v: (v["game_view"] or {}).get("last_result") is not None)
    result = ended["game_view"]["last_result"]
    assert result["round"] == 1 and result["result"] == "one_left" and result["winner"] == 0
    assert result["lives_lost"] == [[0, 0], [1, 1], [2, 1]]
    (revealed,) = [e for e in await game.log(1) if e.get("type") == "decisions_revealed"]
    assert revealed["mandar"] == [0] and revealed["ran"] == [1, 2]
    assert revealed["by_timeout"] == [1, 2]


async def test_turn_timeouts_draw_and_discard_for_the_absent(client, settings):
    timers = {"decision_timeout_ms": 60_000, "turn_timeout_ms": 60_000, "claim_window_ms": 100}
    game = await start_game(
        client,
        settings,
        players=3,
        dealer=2,
        hands=HANDS,
        stock=["5C", "AH", "7D"],
        options={"lives": 3, **timers},
    )
    for seat in range(3):
        await game.decide(seat, True)
    start = await game.view(0)
    assert start["timer"]["kind"] == "turn"

    # seat 0 does nothing: the server draws the stock top and discards that very card
    await expire_timer(game)
    turn1 = await game.wait_phase("draw", turn=1, seat=1)
    assert turn1["game_view"]["round"]["pile"] == cards("5C")
    (window,) = of_type(turn1, "claim_window_ended")
    assert window["by_timeout"] is True and window["claimants"] == []
    assert (await game.game(0))["round"]["hand"] == cards(*HANDS[0])

    # seat 1 draws and stops: the server discards the card just drawn
    drawn = await game.act(1, "draw_stock")
    assert drawn["game_view"]["round"]["drawn"] == cards("AH")[0]
    await expire_timer(game)
    turn2 = await game.wait_phase("draw", turn=2, seat=2)
    assert turn2["game_view"]["round"]["pile"] == cards("5C", "AH")
    assert (await game.game(1))["round"]["hand"] == cards(*HANDS[1])

    # seat 2 takes AH from the pile and stops: AH is locked, so the server discards the most
    # recently received unlocked card (its ninth card, 3C)
    taken = await game.act(2, "draw_discard")
    assert taken["game_view"]["round"]["locked"] == cards("AH")
    await expire_timer(game)
    turn0 = await game.wait_phase("draw", turn=0, seat=0)
    assert turn0["game_view"]["round"]["pile"] == cards("5C", "3C")
    assert (await game.game(2))["round"]["hand"] == cards(*HANDS[2][:8], "AH")

    moves = [
        (e["type"], e["seat"], e.get("card"), e.get("by_timeout"))
        for e in await game.log(1)
        if e.get("type") in ("drew_stock", "drew_discard", "discarded")
    ]
    assert moves == [
        ("drew_stock", 0, cards("5C")[0], True),
        ("discarded", 0, cards("5C")[0], True),
        ("drew_stock", 1, cards("AH")[0], False),
        ("discarded", 1, cards("AH")[0], True),
        ("drew_discard", 2, cards("AH")[0], None),
        ("discarded", 2, cards("3C")[0], True),
    ]
    # a timeout never closes and never takes a life: the round goes on
    assert turn0["game_view"]["last_result"] is None


async def test_a_turn_is_one_timer_drawing_does_not_move_it(client, settings):
    timers = {"decision_timeout_ms": 60_000, "turn_timeout_ms": 60_000, "claim_window_ms": 100}
    game = await start_game(
        client, settings, players=3, dealer=2, hands=HANDS, options={"lives": 3, **timers}
    )
    for seat in range(3):
        await game.decide(seat, True)
    turn = await game.view(0)
    assert turn["timer"]["kind"] == "turn"
    drew = await game.act(0, "draw_stock")
    # the view shows when the turn really ends: the timer that started with the turn
    assert due(drew) == due(turn)
    await expire_timer(game)
    moved = await game.wait_phase("draw", turn=1, seat=0)
    fired = [e for e in await game.log(1) if e.get("type") == "discarded"]
    assert fired and fired[0]["by_timeout"] is True
    assert moved["timer"]["kind"] == "turn" and due(moved) > due(turn)


async def test_decisions_share_one_timer(client, settings):
    timers = {"decision_timeout_ms": 45_000, "turn_timeout_ms": 60_000, "claim_window_ms": 60_000}
    dealt = dt.datetime.now(dt.UTC)
    game = await start_game(client, settings, players=3, dealer=2, options={"lives": 3, **timers})
    first = await game.view(0)
    assert first["timer"]["kind"] == "decision"
    # the table's option, not the default (30 s) nor any other length
    assert dealt + dt.timedelta(seconds=45) <= due(first)
    assert due(first) <= dt.datetime.now(dt.UTC) + dt.timedelta(seconds=45)
    decided = await game.decide(0, True)
    assert due(decided) == due(first)
