"""Who keeps a table the presence sweep freezes (RULES.md §3): with nobody connected, the
living player seen last; and a player whose own timers ran out ``away_after_timeouts`` times
in a row is away, connected or not.  The sweeps are run by the test (no scheduler)."""

from __future__ import annotations

import uuid

import pytest

from tests.integration.tables.scenario import Game, clock, self_driven, sql, three_players

pytestmark = pytest.mark.asyncio


@pytest.fixture
def settings(database_url):
    return self_driven(database_url, 60)


async def last_seen(game: Game, seat: int, hours_ago: float) -> None:
    await sql(
        game.settings,
        "UPDATE game.presence SET last_seen_at = now() - make_interval(secs => :seconds)"
        " WHERE table_id = :table AND user_id = :user",
        table=uuid.UUID(game.id),
        user=uuid.UUID(game.user(seat)),
        seconds=hours_ago * 3600,
    )


async def frozen_note(game: Game) -> dict:
    notes = [entry for entry in await game.log(1) if entry["log"] == "note"]
    assert notes and notes[-1]["type"] == "frozen", notes
    return notes[-1]


@pytest.mark.parametrize("seen_last", [1, 2])
async def test_with_nobody_connected_the_player_seen_last_keeps_the_table(
    client, settings, seen_last
):
    game = await three_players(client, settings)
    for seat in range(3):
        await last_seen(game, seat, 2 if seat == seen_last else 3)
    async with clock(settings) as timers:
        assert await timers.sweeper.sweep() == 1
    note = await frozen_note(game)
    assert note["online"] == [] and note["keeper"] == seen_last


async def test_players_away_exactly_at_the_limit_play_no_more(client, settings):
    """Every player connected, each with ``away_after_timeouts`` timeouts in a row: nobody
    plays, so the table freezes (one timeout fewer, and it would not)."""
    game = await three_players(client, settings)
    limit = settings.away_after_timeouts
    for timeouts, frozen in ((limit - 1, False), (limit, True)):
        await sql(
            settings,
            "UPDATE game.presence SET timeouts_in_a_row = :n, last_seen_at = now()"
            " WHERE table_id = :table",
            n=timeouts,
            table=uuid.UUID(game.id),
        )
        async with clock(settings) as timers:
            await timers.sweeper.sweep()
        assert (await game.view(None))["frozen"] is frozen, timeouts
    note = await frozen_note(game)
    assert note["online"] == [0, 1, 2] and note["away"] == [0, 1, 2]


async def test_players_seen_just_past_the_grace_are_gone(client, settings):
    """Seen a minute and a half ago, past the minute's grace: gone, and the one player
    still connected keeps the table."""
    game = await three_players(client, settings)
    for seat in (1, 2):
        await last_seen(game, seat, 90 / 3600)
    async with clock(settings) as timers:
        assert await timers.sweeper.sweep() == 1
    note = await frozen_note(game)
    assert note["online"] == [0] and note["keeper"] == 0
