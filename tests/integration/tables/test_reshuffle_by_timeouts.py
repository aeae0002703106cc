"""A stock that runs out is reshuffled from the round's own RNG stream (RULES.md §2), here in a
round that the server plays by timeouts alone (draw from the stock, discard it).

Nobody plays that round, so the players count as away after a few timeouts and the table
would freeze (docs/tables.md, presence): this module's settings raise
``away_after_timeouts`` past the turns the round needs.
"""

from __future__ import annotations

import pytest

from tests.helpers import auth
from tests.integration.tables.scenario import start_game

pytestmark = pytest.mark.asyncio


@pytest.fixture
def settings(settings):
    """The table tests' settings (``conftest.py``), with nobody ever away."""
    return settings.model_copy(update={"away_after_timeouts": 1_000})


async def test_an_exhausted_stock_is_reshuffled_from_the_rounds_stream(client, settings):
    timers = {"decision_timeout_ms": 60_000, "turn_timeout_ms": 10, "claim_window_ms": 10}
    game = await start_game(client, settings, players=2, dealer=1, options={"lives": 3, **timers})
    await game.decide(0, True)
    await game.decide(1, True)
    # the server plays every turn (draw from the stock, discard it) until the stock runs out
    reshuffled = await game.wait(
        lambda v: ((v["game_view"] or {}).get("round") or {}).get("reshuffles", 0) >= 1,
        seat=None,
        timeout_s=60,
    )
    assert reshuffled["round"]["number"] == 1
    log = await game.log(1)
    (chance,) = [e for e in log if e["log"] == "chance" and e["label"] == "reshuffle/1"]
    (event,) = [e for e in log if e.get("type") == "reshuffled" and e["number"] == 1]
    # the discard pile (104 - 2 x 9 - 1 = 85 cards) minus its top card becomes the stock
    assert chance["kind"] == "reshuffle" and sorted(chance["value"]) == list(range(84))
    assert len(event["stock"]) == 84
    rng_round = await client.get(
        f"/rng/rounds/{reshuffled['round']['rng_round_id']}", headers=auth(game.token(0))
    )
    labels = [stream["label"] for stream in rng_round.json()["streams"]]
    assert "reshuffle/1" in labels
