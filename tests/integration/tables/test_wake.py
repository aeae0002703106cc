"""A deal and a player timer fire when they are due, not at the scheduler's next periodic
sweep: each asks its worker's scheduler to wake at its due time (``TableContext.wake_at``).
The periodic sweep runs every ten seconds here, so a deal or a timeout seen within a few
seconds was fired by the wake."""

from __future__ import annotations

import pytest

from tests.conftest import make_settings
from tests.integration.tables.scenario import start_game

pytestmark = pytest.mark.asyncio


@pytest.fixture
def settings(database_url):
    return make_settings(
        database_url,
        allow_timer_overrides=True,
        presence_grace_s=3600,
        scheduler_poll_interval_s=10,
        deal_delay_s=0.5,
    )


async def test_a_deal_and_a_timeout_fire_at_their_due_time(client, settings):
    timers = {"decision_timeout_ms": 1_000, "turn_timeout_ms": 60_000, "claim_window_ms": 60_000}
    game = await start_game(client, settings, players=2, dealer=0, options={"lives": 3, **timers})
    waiting = await game.view(0)
    assert waiting["timer"]["kind"] == "deal"
    # dealt half a second after the last seat (not at the next sweep, ten seconds on)
    await game.wait_phase("deciding", seat=0, timeout_s=4)
    # seat 1's decision timer (a second) runs out: correr, and the dealer decides
    await game.wait_phase("dealer_deciding", seat=0, timeout_s=4)
