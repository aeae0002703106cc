"""A frozen table whose keeper is gone (eliminated, or away) when its abandon deadline passes
(RULES.md §3: the connected player wins the match and the prize).  The presence sweep and
the deadline runner are driven by the test, so the order of events is exact."""

from __future__ import annotations

import uuid

import pytest

from app.db import Database
from app.rng_api import RngServices
from app.tables.runtime import TableRuntime
from app.tables.timers import PresenceSweeper, table_deadline_handlers
from app.timers import DeadlineRunner
from tests.helpers import auth
from tests.integration.tables.scenario import all_gone_quiet, self_driven, sql, start_game

pytestmark = pytest.mark.asyncio

GRACE_S = 60
"""Players go quiet with :func:`all_gone_quiet`; a heartbeat stays fresh for the rest of the
test however slow the machine."""


@pytest.fixture
def settings(database_url):
    """No scheduler in the app: the test runs the sweeps and the deadlines itself."""
    return self_driven(database_url, GRACE_S)


async def test_a_keeper_eliminated_while_frozen_does_not_leave_the_prize_in_escrow(
    client, settings
):
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
    assert await game.balances() == [500, 500, 500]
    await game.decide(0, True)
    await game.decide(1, True)
    await game.decide(2, False)

    assert settings.database_url is not None
    database = Database.connect(settings.database_url, settings)
    runtime = TableRuntime(settings, RngServices.from_settings(settings), lambda _: None)
    sweeper = PresenceSweeper(database, runtime)
    runner = DeadlineRunner(database, table_deadline_handlers(runtime))
    try:
        # everybody goes quiet but seat 1: the table freezes with seat 1 as its keeper
        await all_gone_quiet(game)
        beat = await client.post(f"/tables/{game.id}/heartbeat", headers=auth(game.token(1)))
        assert beat.status_code == 204, beat.text
        assert await sweeper.sweep() == 1
        frozen = await game.view(None)
        assert frozen["frozen"] is True
        notes = [e for e in await game.log(1) if e["log"] == "note"]
        assert notes[-1]["type"] == "frozen" and notes[-1]["keeper"] == 1

        # seat 0 comes back long enough to close: seat 1 (mandar) loses its two lives
        await game.act(0, "draw_stock")
        closed = await game.act(0, "close")
        assert closed["game_view"]["eliminated"] == [False, True, False]
        assert closed["status"] == "running"
        await sweeper.sweep()  # seat 0 alone among the living is connected: still frozen

        # nobody else comes back: the abandon deadline passes
        await sql(
            settings,
            "UPDATE game.deadlines SET due_at = now() - interval '1 second'"
            " WHERE table_id = :table AND kind = 'abandon'",
            table=uuid.UUID(game.id),
        )
        await runner.run_due()
    finally:
        await database.dispose()

    final = await game.view(0)
    assert final["status"] == "finished", (final["status"], final["frozen"])
    result = final["result"]
    assert result["reason"] == "abandon" and result["winner_seat"] == 0
    assert result["pool_cents"] == 1_500 and result["fee_cents"] == 150
    assert await game.balances() == [1_850, 500, 500]
    (failed,) = await sql(
        settings,
        "SELECT count(*) FROM game.deadlines WHERE table_id = :table AND status = 'failed'",
        table=uuid.UUID(game.id),
    )
    assert failed[0] == 0


async def test_the_player_connected_when_the_abandon_deadline_passes_wins_the_prize(
    client, settings
):
    """docs/tables.md: the player who stayed connected (or, if nobody did, the one seen last)
    wins.  The keeper chosen at the freeze went away and another player came back alone:
    the prize is the one who is there, not the one who left."""
    timers = {"decision_timeout_ms": 60_000, "turn_timeout_ms": 60_000, "claim_window_ms": 100}
    game = await start_game(client, settings, players=3, dealer=2, options={"lives": 3, **timers})
    assert settings.database_url is not None
    database = Database.connect(settings.database_url, settings)
    runtime = TableRuntime(settings, RngServices.from_settings(settings), lambda _: None)
    sweeper = PresenceSweeper(database, runtime)
    runner = DeadlineRunner(database, table_deadline_handlers(runtime))

    async def heartbeat(seat: int) -> None:
        beat = await client.post(f"/tables/{game.id}/heartbeat", headers=auth(game.token(seat)))
        assert beat.status_code == 204, beat.text

    try:
        await all_gone_quiet(game)
        await heartbeat(1)
        assert await sweeper.sweep() == 1
        notes = [e for e in await game.log(1) if e["log"] == "note"]
        assert notes[-1]["type"] == "frozen" and notes[-1]["keeper"] == 1

        # seat 1 leaves too; seat 0 comes back, alone among the living
        await all_gone_quiet(game)
        await heartbeat(0)
        await sweeper.sweep()
        assert (await game.view(None))["frozen"] is True

        await sql(
            settings,
            "UPDATE game.deadlines SET due_at = now() - interval '1 second'"
            " WHERE table_id = :table AND kind = 'abandon'",
            table=uuid.UUID(game.id),
        )
        await heartbeat(0)
        await runner.run_due()
    finally:
        await database.dispose()

    result = (await game.view(0))["result"]
    assert result["reason"] == "abandon"
    assert result["winner_seat"] == 0, result
    assert await game.balances() == [1_850, 500, 500]
