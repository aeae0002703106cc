"""Timers, presence and actions racing one another: the sweeps and the deadline runner are
driven by the test (no scheduler in the app), so each interleaving is exact."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.helpers import assert_error
from tests.integration.tables.scenario import (
    Game,
    all_gone_quiet,
    clock,
    concurrently,
    expire_timer,
    heartbeat,
    make_due,
    self_driven,
    sql,
    three_players,
)

pytestmark = pytest.mark.asyncio

GRACE_S = 60
"""Players go quiet with :func:`all_gone_quiet`; a heartbeat stays fresh for the rest of the
test however slow the machine."""


@pytest.fixture
def settings(database_url):
    """No scheduler in the app: the test runs the sweeps and the deadlines itself."""
    return self_driven(database_url, GRACE_S)


# --- abandonment ---------------------------------------------------------------------------------
async def test_the_abandon_deadline_does_not_end_a_match_two_players_came_back_to(client, settings):
    """RULES.md §3: the connected player wins only *if nobody reconnects* within
    ``abandon_after``.  A player back before the deadline, but after the last presence sweep,
    must not lose the match: the deadline thaws the table instead."""
    game = await three_players(client, settings)
    async with clock(settings) as timers:
        await all_gone_quiet(game)
        await heartbeat(game, 1)
        assert await timers.sweeper.sweep() == 1
        assert (await game.view(None))["frozen"] is True

        # seat 0 comes back just before the deadline passes, before the next sweep
        await heartbeat(game, 0)
        await heartbeat(game, 1)
        await make_due(game, "abandon")
        assert await timers.runner.run_due() == 1

    after = await game.view(None)
    assert after["status"] == "running", after["result"]
    assert after["frozen"] is False
    assert after["timer"] is not None and after["timer"]["kind"] == "decision"
    assert await game.balances() == [500, 500, 500]
    notes = [e for e in await game.log(1) if e["log"] == "note"]
    assert notes[-1]["type"] == "thawed" and notes[-1]["online"] == [0, 1]


# --- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "action",
    [
        {"type": "decide", "mandar": 1.5},
        {"type": 1.5},
        {"type": "close", "partition": [[1.5]]},
        {"type": "decide", "mandar": True, "note": {"x": [2.0]}},
    ],
    ids=["field", "type", "nested", "extra"],
)
async def test_an_action_with_a_float_is_refused_and_changes_nothing(client, settings, action):
    game = await three_players(client, settings)
    before = ((await game.view(None))["step"], (await game.truth())["state_hash"])
    response = await game.post(0, action, action_id="floaty")
    assert_error(response, 400, "invalid_action")
    assert ((await game.view(None))["step"], (await game.truth())["state_hash"]) == before
    # the id was not used up: the same id with a valid action applies
    assert (await game.post(0, {"type": "decide", "mandar": True}, "floaty")).status_code == 200


# --- actions racing their own deadline -------------------------------------------------------
async def log_seqs(game: Game) -> list[tuple[int, int]]:
    rows = await sql(
        game.settings,
        "SELECT r.number, l.seq FROM game.round_log l JOIN game.rounds r ON r.id = l.round_id"
        " WHERE r.table_id = :table ORDER BY r.number, l.seq",
        table=uuid.UUID(game.id),
    )
    return [(number, seq) for number, seq in rows]


@pytest.mark.parametrize("attempt", range(3))
async def test_a_discard_racing_its_turn_timeout_discards_once(client, settings, attempt):
    """The turn's deadline is due while the player's own discard is in flight: either the
    discard applies and the deadline is stale, or the timeout discards and the player's
    discard is a 409.  One card reaches the pile, the log has no gap and no duplicate."""
    game = await three_players(client, settings)
    for seat in range(3):
        await game.decide(seat, True)
    turn = (await game.game(0))["round"]["turn"]
    drew = await game.act(turn, "draw_stock")
    card = next(
        c for c in drew["game_view"]["round"]["hand"] if c != drew["game_view"]["round"]["drawn"]
    )
    # the turn's timer runs out (its deadline and the table's timer: make_due alone leaves the
    # deadline older than the table's timer, and the runner drops it as re-armed)
    await expire_timer(game)
    body = {"action_id": "discard-1", "action": {"type": "discard", "card": card}}
    async with clock(settings) as timers:
        fired, [response] = await asyncio.gather(
            timers.runner.run_due(),
            concurrently(client, [(f"/tables/{game.id}/actions", body, game.token(turn))]),
        )
    assert fired >= 1  # the turn's deadline (and the stale ones of the decisions)
    truth = (await game.truth())["round"]
    assert len(truth["pile"]) == 1
    assert len(dict(truth["hands"])[turn]) == 9
    inputs = [e for e in await game.log(1) if e["log"] == "input" and e["type"] != "decide"]
    kinds = [e["type"] for e in inputs]
    if response.status_code == 200:
        assert kinds == ["draw_stock", "discard"] and truth["pile"] == [card]
    else:
        assert_error(response, 409, response.json()["code"])
        assert kinds == ["draw_stock", "timeout"] and truth["pile"] == [
            drew["game_view"]["round"]["drawn"]
        ]
    seqs = await log_seqs(game)
    assert [seq for _, seq in seqs] == list(range(1, len(seqs) + 1))


# --- secrets while frozen -----------------------------------------------------------------------
async def test_a_secret_decision_on_a_frozen_table_changes_nobody_elses_view(client, settings):
    """RULES.md §3: decisions are secret until the dealer decides, and not even *that* a
    player decided may show (docs/tables.md, Realtime).  A frozen table (one player left
    connected) is still watched by spectators and by players who poll without a heartbeat:
    the connected player's decision must not bump the step or show events to them."""
    game = await three_players(client, settings)
    async with clock(settings) as timers:
        await all_gone_quiet(game)
        await heartbeat(game, 0)
        assert await timers.sweeper.sweep() == 1
    assert (await game.view(None))["frozen"] is True
    before = {other: await game.view(other) for other in (1, 2, None)}
    mine = await game.decide(0, True)
    assert mine["game_view"]["round"]["my_decision"] is True
    for other in (1, 2, None):
        assert await game.view(other) == before[other], other
