"""Client seeds of players out of the match (docs/tables.md, "Rounds and the event log"): an
eliminated player keeps their seat to watch but is dealt no more cards, so they may not shape
the deck of the rounds they do not play.  The deals are fired by the test (no scheduler in the
app, a long client-seed window), so the window cannot close under a slow request."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.helpers import assert_error, auth
from tests.integration.tables.scenario import (
    SLOW_TIMERS,
    Game,
    add_client_seed,
    clock,
    deals_by_hand,
    make_due,
    sql,
    start_game,
)

pytestmark = pytest.mark.asyncio

HANDS = {
    0: ["2C", "3C", "4C", "5H", "6H", "7H", "9S", "9H", "QD"],  # closes with 9C
    1: ["4H", "8H", "JD", "KC", "10S", "3D", "7S", "QS", "KH"],
    2: ["2H", "6C", "9D", "QH", "4D", "8D", "5H", "10C", "3C"],
}


@pytest.fixture
def settings(database_url):
    return deals_by_hand(database_url)


async def add_seed(game: Game, seat: int, seed_hex: str) -> Any:
    return await add_client_seed(game, game.token(seat), seed_hex)


async def recorded(game: Game, rng_round_id: str) -> tuple[Any, ...]:
    """Everything a client seed writes or could change: the table's step, events and timer,
    every round log entry of the table, and the RNG round's client seeds."""
    rows = await sql(
        game.settings,
        "SELECT t.step, t.last_events, t.timer_kind, t.timer_due_at,"
        " (SELECT count(*) FROM game.round_log l JOIN game.rounds r ON r.id = l.round_id"
        "  WHERE r.table_id = t.id),"
        " (SELECT count(*) FROM rng.client_seeds s WHERE s.round_id = :rng_round)"
        " FROM game.tables t WHERE t.id = :table",
        table=uuid.UUID(game.id),
        rng_round=uuid.UUID(rng_round_id),
    )
    public = await game.client.get(f"/rng/rounds/{rng_round_id}", headers=auth(game.token(0)))
    assert public.status_code == 200, public.text
    return (*rows[0], public.json()["contributors"], public.json()["client_seeds"])


async def test_an_eliminated_player_adds_no_client_seed_and_the_living_add_one_each(
    client, settings
):
    game = await start_game(
        client,
        settings,
        players=3,
        dealer=2,
        hands=HANDS,
        stock=["9C"],
        options={"lives": 2, **SLOW_TIMERS},
    )
    async with clock(settings) as timers:
        await make_due(game, "deal")
        assert await timers.runner.run_due() == 1
        # round 1: seat 0 closes, seat 1 played and loses its two lives, the dealer ran
        await game.decide(0, True)
        await game.decide(1, True)
        await game.decide(2, False)
        await game.act(0, "draw_stock")
        closed = await game.act(0, "close")
        assert closed["game_view"]["eliminated"] == [False, True, False]

        waiting = await game.view(1)
        assert waiting["status"] == "running" and waiting["timer"]["kind"] == "deal"
        assert waiting["round"]["number"] == 2
        rng_round_id = waiting["round"]["rng_round_id"]
        before = await recorded(game, rng_round_id)
        assert before[-2:] == ([], [])

        # the eliminated seat 1 is refused, and nothing is written (no seed, no log note)
        refused = assert_error(await add_seed(game, 1, "b2"), 409, "seat_eliminated")
        assert refused["details"] == {"seat": 1}
        assert await recorded(game, rng_round_id) == before

        # the living seats add one seed each; a second seed from a seat is refused
        assert (await add_seed(game, 2, "c3")).status_code == 204
        assert (await add_seed(game, 0, "a1")).status_code == 204
        added = await recorded(game, rng_round_id)
        assert added[-2:] == (["seat:00", "seat:02"], ["a1", "c3"])
        assert_error(await add_seed(game, 0, "a2"), 409, "already_contributed")
        assert_error(await add_seed(game, 1, "b2"), 409, "seat_eliminated")
        assert await recorded(game, rng_round_id) == added
        notes = [entry for entry in await game.log(2) if entry["log"] == "note"]
        assert [(note["seat"], note["client_seed"]) for note in notes] == [(2, "c3"), (0, "a1")]

        # round 2 is dealt to the living only, from the living's seeds
        await make_due(game, "deal")
        assert await timers.runner.run_due() == 1
    dealt = await game.view(0)
    assert dealt["game_view"]["round"]["phase"] == "deciding"
    (event,) = [entry for entry in await game.log(2) if entry.get("type") == "dealt"]
    assert 1 not in event["seats"]
    # their moves are refused the same way (the table moved on without them), changing nothing
    step = (await game.view(0))["step"]
    refused = assert_error(
        await game.post(1, {"type": "decide", "mandar": True}), 409, "seat_eliminated"
    )
    assert refused["details"] == {"seat": 1}
    assert (await game.view(0))["step"] == step
    public = await client.get(f"/rng/rounds/{rng_round_id}", headers=auth(game.token(0)))
    assert public.json()["contributors"] == ["seat:00", "seat:02"]
