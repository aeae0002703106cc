"""Player actions over HTTP: retries are answered and not applied twice, stale and broken
actions change nothing, timer and service inputs are not player actions, and concurrent
requests on one table are serialized (exactly one of conflicting actions applies)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.helpers import assert_error, auth
from tests.integration.tables.helpers import FAST_TIMERS, create_table, operator, player
from tests.integration.tables.scenario import (
    SLOW_TIMERS,
    Game,
    cards,
    concurrently,
    sql,
    start_game,
)

pytestmark = pytest.mark.asyncio

HANDS = {
    0: ["9C", "2D", "5S", "8S", "JS", "3H", "QC", "6D", "10D"],
    1: ["4H", "8H", "JD", "KC", "10S", "3D", "7S", "QS", "KH"],
    2: ["2H", "6C", "9D", "QH", "4D", "8D", "5H", "10C", "3C"],
    3: ["2C", "3C", "4C", "5H", "6H", "7H", "9S", "9H", "QD"],
}


async def three_players(client: Any, settings: Any, **options: int) -> Game:
    hands = {seat: HANDS[seat] for seat in range(3)}
    return await start_game(
        client,
        settings,
        players=3,
        dealer=2,
        hands=hands,
        stock=["5C", "AH"],
        options={"lives": 3, **SLOW_TIMERS, **options},
    )


async def unchanged(game: Game, before: tuple[int, str, list[int]]) -> None:
    """The table's step, the match state and the balances are what they were."""
    assert await snapshot(game) == before


async def snapshot(game: Game) -> tuple[int, str, list[int]]:
    truth = await game.truth()
    return (await game.view(None))["step"], truth["state_hash"], await game.balances()


# --- idempotency ---------------------------------------------------------------------------------
async def test_a_retried_action_is_answered_and_not_applied_twice(client, settings):
    game = await three_players(client, settings)
    first = await game.post(0, {"type": "decide", "mandar": True}, action_id="decide-1")
    assert first.status_code == 200 and first.json()["replayed"] is False
    step = first.json()["step"]
    again = await game.post(0, {"type": "decide", "mandar": True}, action_id="decide-1")
    assert again.status_code == 200, again.text
    assert again.json()["replayed"] is True
    assert again.json()["step"] == step
    assert again.json()["game_view"] == first.json()["game_view"]
    before = await snapshot(game)
    other = await game.post(0, {"type": "decide", "mandar": False}, action_id="decide-1")
    assert_error(other, 409, "idempotency_conflict")
    await unchanged(game, before)
    # action ids belong to each player: seat 1 may use the same one
    mine = await game.post(1, {"type": "decide", "mandar": True}, action_id="decide-1")
    assert mine.status_code == 200 and mine.json()["replayed"] is False
    await game.decide(2, True)

    drew = await game.post(0, {"type": "draw_stock"}, action_id="draw-1")
    assert drew.status_code == 200 and drew.json()["replayed"] is False
    before = await snapshot(game)
    retried = await game.post(0, {"type": "draw_stock"}, action_id="draw-1")
    assert retried.status_code == 200 and retried.json()["replayed"] is True
    assert retried.json()["game_view"]["round"]["hand"] == drew.json()["game_view"]["round"]["hand"]
    await unchanged(game, before)
    assert len((await game.truth())["round"]["hands"][0][1]) == 10


async def test_stale_out_of_turn_and_broken_actions_change_nothing(client, settings):
    game = await three_players(client, settings)
    await game.decide(0, True)
    before = await snapshot(game)
    assert_error(await game.post(0, {"type": "decide", "mandar": False}), 409, "already_decided")
    assert_error(await game.post(2, {"type": "decide", "mandar": True}), 409, "not_your_turn")
    assert_error(await game.post(0, {"type": "draw_stock"}), 409, "wrong_phase")
    await unchanged(game, before)
    await game.decide(1, True)
    await game.decide(2, True)

    before = await snapshot(game)
    refusals = [
        (1, {"type": "draw_stock"}, 409, "not_your_turn"),
        (0, {"type": "discard", "card": cards("9C")[0]}, 409, "wrong_phase"),
        (0, {"type": "close"}, 409, "wrong_phase"),
        (0, {"type": "decide", "mandar": True}, 409, "wrong_phase"),
        (0, {"type": "claim"}, 409, "wrong_phase"),
        (0, {"type": "draw_discard"}, 422, "discard_pile_empty"),
        (0, {"type": "fold"}, 400, "unknown_action"),
        (0, {"type": "draw_stock", "seat": 1}, 400, "invalid_action"),
        (0, {"type": "draw_stock", "extra": 1}, 400, "invalid_action"),
        (0, {"type": "decide", "mandar": "yes"}, 400, "invalid_action"),
    ]
    for seat, action, status, code in refusals:
        assert_error(await game.post(seat, action), status, code)
    response = await client.post(
        f"/tables/{game.id}/actions",
        json={"action_id": "watch-1", "action": {"type": "draw_stock"}},
        headers=auth(game.spectator),
    )
    assert_error(response, 403, "not_seated")
    for action_id in ("", "a b", "draw-1\n", "x" * 65):  # the id is checked before the table
        response = await client.post(
            f"/tables/{game.id}/actions",
            json={"action_id": action_id, "action": {"type": "draw_stock"}},
            headers=auth(game.token(0)),
        )
        assert_error(response, 400, "validation_error")
    await unchanged(game, before)

    await game.act(0, "draw_stock")
    before = await snapshot(game)
    for action, status, code in [
        ({"type": "discard", "card": cards("KS")[0]}, 422, "card_not_in_hand"),
        ({"type": "discard", "card": "9C"}, 400, "invalid_action"),
        ({"type": "close"}, 422, "cannot_close"),
        ({"type": "draw_stock"}, 409, "wrong_phase"),
    ]:
        assert_error(await game.post(0, action), status, code)
    await unchanged(game, before)


@pytest.mark.parametrize(
    "action",
    [
        {"type": "abandon_win"},
        {"type": "timeout"},
        {"type": "timeout", "token": 1},
        {"type": "claim_window_closed"},
        {"type": "chance", "kind": "deal", "round": 2, "label": "deal", "value": 0},
    ],
    ids=["abandon_win", "timeout", "timeout_token", "claim_window_closed", "chance"],
)
async def test_timer_and_service_inputs_are_not_player_actions(client, settings, action):
    game = await three_players(client, settings)
    before = await snapshot(game)
    assert_error(await game.post(0, action), 400, "unknown_action")
    await unchanged(game, before)
    assert (await game.view(0))["status"] == "running"


# --- serialization -------------------------------------------------------------------------------
async def test_concurrent_retries_of_one_action_apply_it_once(client, settings):
    game = await three_players(client, settings)
    for seat in range(3):
        await game.decide(seat, True)
    step = (await game.view(0))["step"]
    stock = (await game.truth())["round"]["stock_count"]
    path = f"/tables/{game.id}/actions"
    body = {"action_id": "draw-once", "action": {"type": "draw_stock"}}
    responses = await concurrently(client, [(path, body, game.token(0))] * 12)
    assert [r.status_code for r in responses] == [200] * 12, [r.text for r in responses]
    assert sorted(r.json()["replayed"] for r in responses) == [False] + [True] * 11
    truth = await game.truth()
    assert truth["round"]["stock_count"] == stock - 1
    assert len(truth["round"]["hands"][0][1]) == 10
    assert (await game.view(0))["step"] == step + 1


async def test_concurrent_different_actions_exactly_one_applies(client, settings):
    game = await three_players(client, settings)
    for seat in range(3):
        await game.decide(seat, True)
    path = f"/tables/{game.id}/actions"
    # two ways to draw, several times each: one draw happens
    draws = [
        (path, {"action_id": f"draw-{i}", "action": {"type": kind}}, game.token(0))
        for i, kind in enumerate(["draw_stock", "draw_discard"] * 5)
    ]
    responses = await concurrently(client, draws)
    applied = [r for r in responses if r.status_code == 200]
    assert len(applied) == 1 and applied[0].json()["replayed"] is False
    assert {r.status_code for r in responses} <= {200, 409, 422}
    hand = applied[0].json()["game_view"]["round"]["hand"]
    assert len(hand) == 10

    # ten different discards at once: one is discarded, the others find the claim window
    discards = [
        (
            path,
            {"action_id": f"discard-{card}", "action": {"type": "discard", "card": card}},
            game.token(0),
        )
        for card in hand
    ]
    responses = await concurrently(client, discards)
    applied = [r for r in responses if r.status_code == 200]
    assert len(applied) == 1
    for refused in (r for r in responses if r.status_code != 200):
        assert_error(refused, 409, "wrong_phase")
    truth = await game.truth()
    round_ = truth["round"]
    assert round_["phase"] == "claim_window"
    assert len(round_["pile"]) == 1 and len(round_["hands"][0][1]) == 9
    # every card of the shoe is exactly once in a hand, the stock, the pile or the vira
    held = [card for _, hand_ in round_["hands"] for card in hand_]
    everything = held + round_["stock"] + round_["pile"] + [round_["vira"]]
    assert sorted(everything) == list(range(104))


async def test_concurrent_decisions_of_every_player_each_apply_once(client, settings):
    game = await start_game(
        client, settings, players=4, dealer=3, options={"lives": 3, **SLOW_TIMERS}
    )
    path = f"/tables/{game.id}/actions"
    requests = []
    for seat in (0, 1, 2):
        same = {"action_id": f"decide-{seat}", "action": {"type": "decide", "mandar": True}}
        other = {"action_id": f"decide-{seat}", "action": {"type": "decide", "mandar": False}}
        requests += [(path, same, game.token(seat))] * 3 + [(path, other, game.token(seat))]
    responses = await concurrently(client, requests)
    truth = await game.truth()
    decisions = dict(truth["round"]["decisions"])
    assert sorted(decisions) == [0, 1, 2]
    assert truth["round"]["phase"] == "dealer_deciding"
    for seat in (0, 1, 2):
        mine = responses[4 * seat : 4 * seat + 4]
        applied = [r for r in mine if r.status_code == 200 and not r.json()["replayed"]]
        assert len(applied) == 1
        for response in mine:
            if response.status_code != 200:
                assert_error(response, 409, "idempotency_conflict")
        assert applied[0].json()["game_view"]["round"]["my_decision"] is decisions[seat]
    mandar = sum(decisions.values())
    assert (await game.game(3))["round"]["mandar_count"] == mandar


async def test_only_seated_players_send_heartbeats(client, settings):
    op = await operator(client, settings)
    seated = [await player(client, settings, f"beat{i}", 1_000, op) for i in range(2)]
    _, stranger = await player(client, settings, "stranger", 0, op)
    table = await create_table(client, seated[0][1], seat_count=3, options=FAST_TIMERS)
    await client.post(f"/tables/{table['id']}/seat", headers=auth(seated[0][1]))
    ok = await client.post(f"/tables/{table['id']}/heartbeat", headers=auth(seated[0][1]))
    assert ok.status_code == 204, ok.text
    assert_error(
        await client.post(f"/tables/{table['id']}/heartbeat", headers=auth(stranger)),
        403,
        "not_seated",
    )


async def test_no_heartbeat_or_seat_once_the_match_is_over(client, settings):
    """A finished table keeps its seats, but nobody is waited for any more, and nobody sits:
    409 table_closed, not table_full (the match's end is written straight into the table:
    playing one out takes rounds)."""
    game = await start_game(client, settings, players=2, options={"lives": 3, **SLOW_TIMERS})
    await sql(
        settings,
        "UPDATE game.tables SET status = 'finished' WHERE id = :table",
        table=uuid.UUID(game.id),
    )
    for seat in range(2):
        beat = await client.post(f"/tables/{game.id}/heartbeat", headers=auth(game.token(seat)))
        assert_error(beat, 409, "table_closed")
    sit = await client.post(f"/tables/{game.id}/seat", headers=auth(game.spectator))
    assert_error(sit, 409, "table_closed")
