"""An abandon deadline belongs to the freeze that armed it (its token is the freeze's moment):
once that freeze is over -- the table thawed, or froze again later -- the deadline is stale
and ends nothing.  The sweeps and the deadlines are run by the test (no scheduler)."""

from __future__ import annotations

import uuid

import pytest

from tests.integration.tables.scenario import (
    Game,
    all_gone_quiet,
    clock,
    heartbeat,
    self_driven,
    sql,
    three_players,
)

pytestmark = pytest.mark.asyncio


@pytest.fixture
def settings(database_url):
    return self_driven(database_url, 60)


async def abandon_deadlines(game: Game) -> list[tuple[str, str]]:
    """The table's abandon deadlines in arming order: (token, status)."""
    rows = await sql(
        game.settings,
        "SELECT token, status FROM game.deadlines WHERE table_id = :table AND kind = 'abandon'"
        " ORDER BY id",
        table=uuid.UUID(game.id),
    )
    return [(token, status) for token, status in rows]


async def make_abandon_due(game: Game, token: str) -> None:
    await sql(
        game.settings,
        "UPDATE game.deadlines SET due_at = now() - interval '1 second'"
        " WHERE table_id = :table AND kind = 'abandon' AND token = :token",
        table=uuid.UUID(game.id),
        token=token,
    )


async def test_the_abandon_deadline_of_a_thawed_table_is_stale(client, settings):
    game = await three_players(client, settings)
    async with clock(settings) as timers:
        await all_gone_quiet(game)
        await heartbeat(game, 1)
        assert await timers.sweeper.sweep() == 1
        await heartbeat(game, 0)
        assert await timers.sweeper.sweep() == 1  # two players back: thawed
        assert (await game.view(None))["frozen"] is False
        ((token, _),) = await abandon_deadlines(game)
        await make_abandon_due(game, token)
        assert await timers.runner.run_due() == 1
    assert await abandon_deadlines(game) == [(token, "stale")]
    after = await game.view(None)
    assert after["status"] == "running" and after["frozen"] is False
    assert await game.balances() == [500, 500, 500]


async def test_the_abandon_deadline_of_an_earlier_freeze_ends_nothing(client, settings):
    game = await three_players(client, settings)
    async with clock(settings) as timers:
        for _ in range(2):  # frozen, thawed, frozen again
            await all_gone_quiet(game)
            await heartbeat(game, 1)
            assert await timers.sweeper.sweep() == 1
            assert (await game.view(None))["frozen"] is True
            if not (await abandon_deadlines(game))[1:]:
                await heartbeat(game, 0)
                assert await timers.sweeper.sweep() == 1
        (first, _), (second, _) = await abandon_deadlines(game)
        await make_abandon_due(game, first)
        assert await timers.runner.run_due() == 1
        assert await abandon_deadlines(game) == [(first, "stale"), (second, "pending")]
        after = await game.view(None)
        assert after["status"] == "running" and after["frozen"] is True
        assert await game.balances() == [500, 500, 500]
        # its own deadline still ends the match for the player who stayed
        await make_abandon_due(game, second)
        assert await timers.runner.run_due() == 1
    ended = await game.view(None)
    assert ended["status"] == "finished"
    assert ended["result"]["winner_user_id"] == game.user(1)
