"""A table's fill deadline is armed when it opens and stays pending once it fills and starts:
when it comes due, a running table is left as it is (no refund, no cancellation, the
escrow kept for the winner).  The default fill deadline is ten minutes, so every match that
runs longer meets its own."""

from __future__ import annotations

import pytest

from tests.integration.tables.scenario import SLOW_TIMERS, make_due, start_game, until_handled

pytestmark = pytest.mark.asyncio


async def test_the_fill_deadline_of_a_running_table_changes_nothing(client, settings):
    game = await start_game(client, settings, players=2, options={"lives": 3, **SLOW_TIMERS})
    before = await game.view(0)
    balances = await game.balances()
    assert before["status"] == "running" and balances == [500, 500]
    await make_due(game, "fill")
    await until_handled(game, "fill")
    after = await game.view(0)
    assert after["status"] == "running" and after["result"] is None
    assert after["step"] == before["step"] and after["pool_cents"] == 1_000
    assert await game.balances() == balances
