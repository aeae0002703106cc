"""Disconnection (RULES.md §3): with at most one living player connected the table freezes
(timers paused); a player coming back thaws it; if nobody comes back within
``abandon_after`` the connected player wins the match and the prize.  The presence sweep runs
every 2 s in the app under test.  The presence grace is an hour (the tables' settings): a
player goes away when the test dates their last sign of life back (``gone_quiet``) and comes
back with ``POST /tables/{id}/heartbeat``.  With a grace of a second kept by heartbeats, a
slow machine's ``start_game`` (or a late heartbeat) let a sweep find players gone that the
test had connected, and freeze the table before it meant to.
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from tests.integration.tables.scenario import (
    Game,
    expire_timer,
    gone_quiet,
    heartbeat,
    sql,
    start_game,
    until_handled,
)

pytestmark = pytest.mark.asyncio


def due(view: dict) -> dt.datetime:
    assert view["timer"] is not None, view
    return dt.datetime.fromisoformat(view["timer"]["due_at"])


async def deadlines_due_now(game: Game, before: dt.datetime | None = None) -> int:
    """The table's pending game deadlines (those due before ``before``, if given) are due
    now, as if their time had come; how many."""
    rows = await sql(
        game.settings,
        "UPDATE game.deadlines SET due_at = now() - interval '1 second'"
        " WHERE table_id = :table AND kind = 'game' AND status = 'pending'"
        " AND (CAST(:before AS timestamptz) IS NULL OR due_at < :before) RETURNING id",
        table=uuid.UUID(game.id),
        before=before,
    )
    return len(rows)


async def test_a_frozen_table_pauses_its_timer_and_a_returning_player_restarts_it(client, settings):
    # A minute's decision timer, ended by the test: with a 9 s one, the freeze and the thaw
    # (a grace and up to two presence sweeps each) had to fit before it ran out.
    timers = {"decision_timeout_ms": 60_000, "turn_timeout_ms": 60_000, "claim_window_ms": 100}
    game = await start_game(client, settings, players=3, dealer=2, options={"lives": 3, **timers})
    first_due = due(await game.view(0))
    await gone_quiet(game, 1, 2)
    frozen = await game.wait(lambda v: v["frozen"], seat=None, timeout_s=15)
    assert frozen["timer"] is None
    assert frozen["game_view"]["round"]["phase"] == "deciding"
    notes = [e for e in await game.log(1) if e["log"] == "note"]
    assert notes[-1]["type"] == "frozen" and notes[-1]["keeper"] == 0

    # seat 1 comes back: two players are connected again, the table thaws
    await heartbeat(game, 1)
    thawed = await game.wait(lambda v: not v["frozen"], seat=None, timeout_s=15)
    assert thawed["timer"]["kind"] == "decision"
    restarted_due = due(thawed)
    assert dt.datetime.now(dt.UTC) < first_due, "the test needs the thaw before the first due"
    assert restarted_due > first_due

    # the timer armed before the freeze does not fire at its old time: its deadline comes
    # due now (the restarted timer's does not) and the scheduler drops it
    assert await deadlines_due_now(game, before=restarted_due) == 1
    await until_handled(game, "game")
    still = await game.view(None)
    assert still["game_view"]["round"]["phase"] == "deciding"
    assert not [e for e in await game.log(1) if e.get("type") == "timeout"]
    assert due(still) == restarted_due

    # the restarted timer fires: the silent non-dealers run
    await expire_timer(game)
    dealer = await game.wait_phase("dealer_deciding", seat=2, timeout_s=12)
    assert dealer["game_view"]["round"]["mandar_count"] == 0


async def test_nobody_comes_back_the_connected_player_wins_the_prize(client, settings):
    # The decision timer comes due while the table is frozen because the test makes it due
    # then: a 6 s one had to outlast the grace and a presence sweep on a slow machine.
    timers = {
        "decision_timeout_ms": 60_000,
        "turn_timeout_ms": 60_000,
        "claim_window_ms": 100,
        "abandon_after_ms": 5_000,
    }
    game = await start_game(client, settings, players=3, dealer=2, options={"lives": 3, **timers})
    assert await game.balances() == [500, 500, 500]
    await gone_quiet(game, 0, 2)
    frozen = await game.wait(lambda v: v["frozen"], seat=0, timeout_s=15)
    assert frozen["timer"] is None
    assert await deadlines_due_now(game) == 1
    await until_handled(game, "game")
    finished = await game.wait(lambda v: v["status"] == "finished", seat=1, timeout_s=15)
    result = finished["result"]
    assert result["reason"] == "abandon"
    assert result["winner_user_id"] == game.user(1)
    assert result["winner_seat"] == 1
    assert [(p["seat"], p["place"]) for p in result["placements"]] == [(0, 2), (1, 1), (2, 2)]
    # 3 x R$5.00 = R$15.00, fee 10 % = R$1.50, net R$13.50
    assert result["pool_cents"] == 1_500 and result["fee_cents"] == 150
    assert result["payouts"] == [{"user_id": game.user(1), "amount_cents": 1_350}]
    assert await game.balances() == [500, 1_850, 500]
    assert finished["frozen"] is False and finished["timer"] is None
    # the decision timer never fired while the table was frozen
    assert not [e for e in await game.log(1) if e.get("type") == "timeout"]
    (ended,) = [e for e in await game.log(1) if e.get("type") == "match_ended"]
    assert ended["reason"] == "abandon" and ended["winner"] == 1


async def test_an_eliminated_player_online_does_not_keep_the_table_running(client, settings):
    hands = {
        0: ["2C", "3C", "4C", "5H", "6H", "7H", "9S", "9H", "QD"],  # closes with 9C
        1: ["4H", "8H", "JD", "KC", "10S", "3D", "7S", "QS", "KH"],
        2: ["2H", "6C", "9D", "QH", "4D", "8D", "5H", "10C", "3C"],
    }
    timers = {"decision_timeout_ms": 60_000, "turn_timeout_ms": 60_000, "claim_window_ms": 100}
    game = await start_game(
        client,
        settings,
        players=3,
        dealer=2,
        hands=hands,
        stock=["9C"],
        options={"lives": 2, **timers},
    )
    # round 1: seat 0 closes, seat 1 played and loses its two lives, the dealer ran
    await game.decide(0, True)
    await game.decide(1, True)
    await game.decide(2, False)
    await game.act(0, "draw_stock")
    closed = await game.act(0, "close")
    assert closed["game_view"]["eliminated"] == [False, True, False]
    assert closed["game_view"]["lives"] == [2, 0, 1]
    assert (await game.wait(lambda v: not v["frozen"], seat=None))["status"] == "running"

    # seat 2 (alive) goes away; seat 1 (eliminated) keeps watching: one living player
    # is connected, so the table freezes
    await gone_quiet(game, 2)
    frozen = await game.wait(lambda v: v["frozen"], seat=None, timeout_s=8)
    assert frozen["timer"] is None
    notes = [e for e in await game.log(2) if e["log"] == "note"]
    assert notes[-1]["type"] == "frozen" and notes[-1]["keeper"] == 0


# Timers short enough for a match played by its timers alone to reach every player's third
# timeout in a row in a few seconds (round 4 of a 3-life match: the marra rounds).
IDLE_TIMERS = {
    "decision_timeout_ms": 300,
    "turn_timeout_ms": 300,
    "claim_window_ms": 10,
    "abandon_after_ms": 3_000,
}


async def test_a_match_nobody_plays_freezes_and_the_last_player_to_act_wins(client, settings):
    # One life each: the first round is already marra.  The decisions get a minute, so that
    # seat 1's timer cannot run out while the seat that starts the match still commits (it
    # did with 300 ms on a slow CI machine; 2 s left a slower one 3.5 times the 570 ms seen);
    # the dealer's decision then runs out when the test says.
    game = await start_game(
        client,
        settings,
        players=2,
        dealer=0,
        options={"lives": 1, **IDLE_TIMERS, "decision_timeout_ms": 60_000},
    )
    # seat 1 plays once, then both players only keep their connection open: timeouts
    # never close a hand, so without the freeze the marra round would never end
    await game.decide(1, True)
    await expire_timer(game)  # the dealer's decision
    frozen = await game.wait(lambda v: v["frozen"], seat=None, timeout_s=20)
    assert frozen["status"] == "running" and frozen["timer"] is None
    notes = [
        e for e in await game.log(frozen["game_view"]["round"]["number"]) if e["log"] == "note"
    ]
    assert notes[-1] == {
        "log": "note",
        "type": "frozen",
        "keeper": 1,  # acted last (a tie would go to seat 0)
        "online": [0, 1],
        "away": [0, 1],
    }
    finished = await game.wait(lambda v: v["status"] == "finished", seat=None, timeout_s=15)
    result = finished["result"]
    assert result["reason"] == "abandon"
    assert result["winner_seat"] == 1 and result["winner_user_id"] == game.user(1)
    assert await game.balances() == [500, 1_400]  # 2 x R$5.00 less 10 %: R$9.00


async def test_a_player_who_acts_again_thaws_a_table_nobody_played(client, settings):
    # The sweep freezes the table in whatever phase the timeouts left it.  In a claim window
    # (10 ms, plus the scheduler's poll) nobody can act, so the test proves nothing there:
    # it plays again on a new table, up to five times (each about 2 % locally).
    for attempt in range(5):
        game = await start_game(
            client,
            settings,
            players=2,
            dealer=0,
            options={"lives": 3, **IDLE_TIMERS, "abandon_after_ms": 60_000},
            tag=f"-{attempt}" if attempt else "",
        )
        frozen = await game.wait(lambda v: v["frozen"], seat=None, timeout_s=20)
        round_ = frozen["game_view"]["round"]
        if round_["phase"] in ("draw", "discard"):
            break
    else:
        pytest.fail(f"five tables froze in a claim window (last: phase {round_['phase']})")
    seat = round_["turn"]
    if round_["phase"] == "draw":
        await game.act(seat, "draw_stock")
    else:
        await game.act(seat, "discard", card=(await game.game(seat))["hand"][0])
    thawed = await game.wait(lambda v: not v["frozen"], seat=None, timeout_s=6)
    assert thawed["status"] == "running" and thawed["timer"] is not None
    # the other player is still away, but one connected player plays: the table runs on
    # (and freezes again when the player who came back stops too)
    notes = [e for e in await game.log(round_["number"]) if e["log"] == "note"]
    assert notes[-1] == {"log": "note", "type": "thawed", "online": [0, 1]}
