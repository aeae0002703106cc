"""Bater fora da vez over HTTP (RULES.md §3): the claim window, priority by turn order after
the discarder whatever the click order, and queimar."""

from __future__ import annotations

import queue
from typing import Any

import pytest

from tests.helpers import assert_error
from tests.integration.tables.scenario import Game, cards, expire_timer, start_game

pytestmark = pytest.mark.asyncio

TIMERS = {"decision_timeout_ms": 60_000, "turn_timeout_ms": 60_000, "claim_window_ms": 60_000}
"""Players act by hand; each claim window stays open until the test has looked at everything
it needs (a minute), then its timer runs out (:func:`expire_timer`) and the scheduler closes it.
A short window (it was 1.5 s) could close under a slow machine before the claims arrived."""
JUNK = ["4H", "8H", "JD", "KC", "10S", "3D", "7S", "QS", "KH"]
"""No meld, and no two melds with any card."""
DISCARDER = ["9C", "2D", "5S", "8S", "JS", "3H", "QC", "6D", "10D"]
"""Seat 0 opens the round and discards 9C."""
NINE_CLUBS = cards("9C")[0]


def of_type(view: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [event for event in view["events"] if event["type"] == kind]


async def everybody_plays(game: Game, seats: int = 4) -> None:
    for seat in range(seats):
        await game.decide(seat, True)


async def discard_nine_of_clubs(game: Game) -> dict[str, Any]:
    """Seat 0 draws the stock top and discards 9C; the claim window opens."""
    await game.act(0, "draw_stock")
    after = await game.act(0, "discard", card=NINE_CLUBS)
    assert after["game_view"]["round"]["phase"] == "claim_window"
    assert after["game_view"]["round"]["claim_window"] == {"discarder": 0, "card": NINE_CLUBS}
    return after


async def wait_round_over(game: Game) -> dict[str, Any]:
    """The claim window's timer runs out; the scheduler closes it and the round ends."""
    await expire_timer(game)
    return await game.wait(lambda v: (v["game_view"] or {}).get("last_result") is not None)


@pytest.mark.parametrize("clicks", [(2, 1), (1, 2)], ids=["far_first", "near_first"])
async def test_the_claimant_nearest_after_the_discarder_closes(client, settings, clicks):
    hands = {
        0: DISCARDER,
        # 9C closes both hands; seat 1 comes first after the discarder
        1: ["2C", "3C", "4C", "5H", "6H", "7H", "9S", "9H", "QD"],
        2: ["2S", "3S", "4S", "5D", "6D", "7D", "7C", "8C", "JH"],
        3: JUNK,
    }
    game = await start_game(
        client,
        settings,
        players=4,
        dealer=3,
        hands=hands,
        vira="KD",
        stock=["5C"],
        options={"lives": 3, **TIMERS},
    )
    assert (await game.game(1))["round"]["hand"] == cards(*hands[1])
    await everybody_plays(game)
    before = await game.balances()
    window = await discard_nine_of_clubs(game)
    assert window["timer"]["kind"] == "claim_window"

    # nobody may draw while the window is open; claims need two melds; one claim each
    assert_error(await game.post(1, {"type": "draw_stock"}), 409, "wrong_phase")
    assert_error(await game.post(0, {"type": "claim"}), 422, "discarder_cannot_claim")
    assert_error(await game.post(3, {"type": "claim"}), 422, "claim_not_allowed")
    for seat in clicks:
        claimed = await game.act(seat, "claim")
        assert claimed["game_view"]["round"]["claimed"] is True
        assert [e["seat"] for e in of_type(claimed, "claimed")] == [seat]
        assert claimed["timer"] == window["timer"]  # a claim does not extend the window
    assert_error(await game.post(clicks[0], {"type": "claim"}), 409, "already_claimed")
    # claims are secret until the window closes
    for seat in (0, 3, None):
        seen = await game.view(seat)
        assert seen["game_view"]["round"].get("claimed") in (False, None)
        assert of_type(seen, "claimed") == []

    ended = await wait_round_over(game)
    (closing,) = of_type(ended, "claim_window_ended")
    assert closing["claimants"] == [1, 2]  # priority order, not click order
    assert closing["by_timeout"] is True
    outcomes = [(e["seat"], e["outcome"]) for e in of_type(ended, "claim_resolved")]
    assert outcomes == [(1, "closed"), (2, "not_evaluated")]
    (closed,) = of_type(ended, "closed")
    assert closed["seat"] == 1 and closed["out_of_turn"] is True
    assert closed["claimed_card"] == NINE_CLUBS
    assert closed["discard"] == cards("QD")[0]
    result = ended["game_view"]["last_result"]
    assert result["result"] == "closed" and result["winner"] == 1 and result["out_of_turn"]
    assert sorted(card for meld in result["melds"] for card in meld) == sorted(
        cards("2C", "3C", "4C", "5H", "6H", "7H", "9S", "9H", "9C")
    )
    assert result["lives_lost"] == [[0, 2], [1, 0], [2, 2], [3, 2]]
    assert ended["game_view"]["lives"] == [1, 3, 1, 1]
    assert (await game.game(2))["round"]["burned"] == []  # not evaluated is not burned
    assert await game.balances() == before  # the match goes on


async def test_a_claim_that_does_not_close_burns_and_the_next_claimant_closes(client, settings):
    hands = {
        0: DISCARDER,
        # seat 1 holds two melds but 9C does not close its hand; seat 2's closes
        1: ["2C", "3C", "4C", "5H", "6H", "7H", "10S", "JD", "QD"],
        2: ["2S", "3S", "4S", "5D", "6D", "7D", "7C", "8C", "JH"],
        3: JUNK,
    }
    game = await start_game(
        client,
        settings,
        players=4,
        dealer=3,
        hands=hands,
        stock=["5C"],
        options={"lives": 3, **TIMERS},
    )
    await everybody_plays(game)
    await discard_nine_of_clubs(game)
    await game.act(1, "claim")
    await game.act(2, "claim")
    ended = await wait_round_over(game)
    outcomes = [(e["seat"], e["outcome"]) for e in of_type(ended, "claim_resolved")]
    assert outcomes == [(1, "burned"), (2, "closed")]
    assert ended["game_view"]["last_result"]["winner"] == 2
    assert ended["game_view"]["lives"] == [1, 1, 3, 1]


async def test_a_burned_player_cannot_draw_the_discard_nor_claim_again(client, settings):
    hands = {
        0: DISCARDER,
        1: JUNK,
        # two melds; 9C does not close
        2: ["2S", "3S", "4S", "5D", "6D", "7D", "10H", "JC", "KS"],
        3: ["2H", "6C", "9D", "QH", "4D", "8D", "5H", "10C", "3C"],
    }
    game = await start_game(
        client,
        settings,
        players=4,
        dealer=3,
        hands=hands,
        stock=["5C", "AH"],
        options={"lives": 3, **TIMERS},
    )
    await everybody_plays(game)
    await discard_nine_of_clubs(game)
    claimed = await game.act(2, "claim")
    assert claimed["game_view"]["round"]["holds_two_melds"] is True

    # the window closes: seat 2 burns, the card stays on the pile for the next player
    await expire_timer(game)
    turn = await game.wait_phase("draw", turn=1, seat=1)
    outcomes = [(e["seat"], e["outcome"]) for e in of_type(turn, "claim_resolved")]
    assert outcomes == [(2, "burned")]
    for seat in (0, 1, 2, 3, None):
        round_ = (await game.game(seat))["round"]
        assert round_["burned"] == [2]
        assert round_["pile"] == [NINE_CLUBS]
    taken = await game.act(1, "draw_discard")
    assert taken["game_view"]["round"]["taken_from_pile"] == NINE_CLUBS
    assert taken["game_view"]["round"]["locked"] == [NINE_CLUBS]
    assert_error(await game.post(1, {"type": "discard", "card": NINE_CLUBS}), 422, "card_locked")
    await game.act(1, "discard", card=cards("4H")[0])

    # the burned player may not claim for the rest of the round...
    assert_error(await game.post(2, {"type": "claim"}), 422, "burned")
    await expire_timer(game)
    await game.wait_phase("draw", turn=2, seat=2)
    # ...nor draw from the discard pile
    before = await game.view(2)
    assert_error(await game.post(2, {"type": "draw_discard"}), 422, "burned")
    assert (await game.view(2))["step"] == before["step"]
    drew = await game.act(2, "draw_stock")
    assert drew["game_view"]["round"]["drawn"] == cards("AH")[0]
    truth = await game.truth()
    assert truth["round"]["burned"] == [2]


async def test_a_claim_changes_nothing_anybody_else_can_see(client, settings):
    """A claim means two melds in hand (RULES.md §3), and the claim window opens after every
    discard so that nobody learns who holds them: until the window closes, nobody but the
    claimant sees any change -- not the claim, not even that the table moved (same step, same
    events, no view pushed)."""
    hands = {
        0: DISCARDER,
        1: ["2C", "3C", "4C", "5H", "6H", "7H", "9S", "9H", "QD"],  # two melds: may claim
        2: JUNK,
        3: JUNK,
    }
    game = await start_game(
        client,
        settings,
        players=4,
        dealer=3,
        hands=hands,
        vira="KD",
        stock=["5C"],
        options={"lives": 3, **TIMERS},
    )
    await everybody_plays(game)
    await discard_nine_of_clubs(game)
    others = (0, 2, 3, None)
    before = {seat: await game.view(seat) for seat in others}
    mine = await game.view(1)
    session = await client.websocket_connect(f"/tables/{game.id}/ws?token={game.token(2)}")
    with session as socket:
        assert socket.receive_json(timeout=10)["view"] == before[2]

        claimed = await game.act(1, "claim")
        assert claimed["game_view"]["round"]["claimed"] is True
        assert [e["seat"] for e in of_type(claimed, "claimed")] == [1]
        assert claimed["step"] == mine["step"]
        for seat in others:
            assert await game.view(seat) == before[seat], seat
        with pytest.raises(queue.Empty):
            message = socket.receive_json(timeout=1)
            pytest.fail(f"seat 2 was sent a view after seat 1's claim: {message}")

        # the window closes (a public change): seat 2 is sent the view that shows the claim
        await expire_timer(game)
        closed = socket.receive_json(timeout=30)["view"]
        assert closed["step"] > before[2]["step"]
        (ended,) = of_type(closed, "claim_window_ended")
        assert ended["claimants"] == [1]
