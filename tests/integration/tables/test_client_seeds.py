"""Client seeds (docs/rng.md §4): before a round's deal its commitment is public and seated
players may add their own seeds; after the deal they are refused; once the round ends its
seed is revealed and the deal recomputes from the seed and the client seeds."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.conftest import make_settings
from tests.helpers import assert_error, auth
from tests.integration.tables.helpers import create_table, operator, player, view
from tests.integration.tables.scenario import SLOW_TIMERS, Game, add_client_seed, sql, start_game

pytestmark = pytest.mark.asyncio

DEAL_DELAY_S = 1.5


@pytest.fixture
def settings(database_url):
    """Each deal waits a moment after its round's commitment: the client-seed window."""
    return make_settings(
        database_url,
        allow_timer_overrides=True,
        presence_grace_s=3600,
        scheduler_poll_interval_s=0.05,
        deal_delay_s=DEAL_DELAY_S,
    )


async def rng_round(game: Game, rng_round_id: str) -> dict[str, Any]:
    response = await game.client.get(f"/rng/rounds/{rng_round_id}", headers=auth(game.token(0)))
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_client_seeds_before_the_deal_are_mixed_into_it(client, settings):
    game = await start_game(client, settings, players=3, options={"lives": 3, **SLOW_TIMERS})
    waiting = await game.view(0)
    assert waiting["status"] == "running"
    assert waiting["timer"]["kind"] == "deal"
    assert waiting["game_view"]["waiting_for_chance"] == "first_dealer"
    assert waiting["game_view"]["round"] is None  # nothing dealt yet
    commitment = waiting["round"]["commitment"]
    assert waiting["round"]["number"] == 1 and len(commitment) == 64
    assert (await game.view(None))["round"]["commitment"] == commitment

    seeds = ["a1" * 16, "b2" * 8, "c3"]
    for seat, seed in enumerate(seeds):
        response = await add_client_seed(game, game.token(seat), seed)
        assert response.status_code == 204, response.text
    assert_error(await add_client_seed(game, game.token(0), "dd"), 409, "already_contributed")
    assert_error(await add_client_seed(game, game.spectator, "ee"), 403, "not_seated")
    rng_round_id = waiting["round"]["rng_round_id"]
    public = await rng_round(game, rng_round_id)
    assert public["commitment"] == commitment
    assert public["contributors"] == ["seat:00", "seat:01", "seat:02"]
    assert public["client_seeds"] == seeds
    assert public["seed"] is None

    dealt = await game.wait_phase("deciding", seat=0, timeout_s=DEAL_DELAY_S + 5)
    assert dealt["round"]["commitment"] == commitment
    refused = assert_error(
        await add_client_seed(game, game.token(1), "ff"), 409, "client_seeds_closed"
    )
    assert refused["details"]["reason"] == "drawn"
    hands = {seat: (await game.game(seat))["round"]["hand"] for seat in range(3)}
    dealer = dealt["game_view"]["dealer"]

    # everybody runs: the round ends and its seed is revealed
    for seat in [s for s in range(3) if s != dealer] + [dealer]:
        await game.decide(seat, False)
    revealed = await rng_round(game, rng_round_id)
    assert revealed["revealed"] is True and revealed["seed"] is not None
    body = {
        "commitment": commitment,
        "seed": revealed["seed"],
        "client_seeds": seeds,
        "deck_size": 104,
        "player_count": 3,
    }
    verified = await client.post("/rng/verify", json=body)
    assert verified.status_code == 200, verified.text
    assert verified.json()["first_dealer"]["seat"] == dealer
    deal = verified.json()["deal"]
    order = [(dealer + 1 + step) % 3 for step in range(3)]
    for seat in range(3):
        expected = [deal[i] for i in range(27) if order[i % 3] == seat]
        assert hands[seat] == expected
    # without the client seeds the same seed deals another deck
    body["client_seeds"] = []
    assert (await client.post("/rng/verify", json=body)).json()["deal"] != deal

    # the next round has its own commitment and its own client-seed window
    nxt = await game.view(0)
    assert nxt["round"]["number"] == 2
    assert nxt["round"]["commitment"] != commitment
    assert nxt["timer"]["kind"] == "deal"
    assert (await add_client_seed(game, game.token(1), "ff")).status_code == 204
    assert (await rng_round(game, nxt["round"]["rng_round_id"]))["client_seeds"] == ["ff"]


async def table_state(game: Game, rng_round_id: str) -> tuple[Any, ...]:
    """What a client seed could change: the table's step and events, the round's log and
    the RNG round's client seeds."""
    rows = await sql(
        game.settings,
        "SELECT t.step, t.last_events, (SELECT count(*) FROM game.round_log l"
        " JOIN game.rounds r ON r.id = l.round_id WHERE r.table_id = t.id)"
        " FROM game.tables t WHERE t.id = :table",
        table=uuid.UUID(game.id),
    )
    public = await rng_round(game, rng_round_id)
    return (*rows[0], public["client_seeds"], public["contributors"])


async def test_client_seeds_mix_by_seat_whatever_their_arrival_and_refusals_change_nothing(
    client, settings
):
    game = await start_game(client, settings, players=2, options={"lives": 3, **SLOW_TIMERS})
    waiting = await game.view(0)
    rng_round_id = waiting["round"]["rng_round_id"]
    assert (await add_client_seed(game, game.token(1), "b2")).status_code == 204
    assert (await add_client_seed(game, game.token(0), "a1")).status_code == 204
    public = await rng_round(game, rng_round_id)
    assert public["contributors"] == ["seat:00", "seat:01"]
    assert public["client_seeds"] == ["a1", "b2"]

    before = await table_state(game, rng_round_id)
    assert_error(await add_client_seed(game, game.token(0), "c3"), 409, "already_contributed")
    assert_error(await add_client_seed(game, game.spectator, "c3"), 403, "not_seated")
    assert_error(await add_client_seed(game, game.operator, "c3"), 403, "forbidden")
    assert_error(await add_client_seed(game, game.token(1), "c"), 400, "validation_error")
    assert_error(await add_client_seed(game, game.token(1), "c3\n"), 400, "validation_error")
    missing = await client.post(
        f"/tables/{uuid.uuid4()}/client-seed",
        json={"client_seed_hex": "c3"},
        headers=auth(game.token(0)),
    )
    assert_error(missing, 404, "table_not_found")
    assert await table_state(game, rng_round_id) == before

    await game.wait_phase("deciding", seat=0, timeout_s=DEAL_DELAY_S + 5)
    dealt = await table_state(game, rng_round_id)
    assert_error(await add_client_seed(game, game.token(1), "c3"), 409, "client_seeds_closed")
    assert await table_state(game, rng_round_id) == dealt


async def test_an_accepted_client_seed_changes_no_view(client, settings):
    """Views show no client seed: adding one keeps every view as it was (step, last events,
    timer), so the events that opened the round stay on screen and nobody is woken."""
    game = await start_game(client, settings, players=3, options={"lives": 3, **SLOW_TIMERS})
    before = {seat: await game.view(seat) for seat in (0, 1, 2, None)}
    assert before[None]["events"] and before[None]["timer"]["kind"] == "deal"
    assert (await add_client_seed(game, game.token(0), "a1")).status_code == 204
    assert (await add_client_seed(game, game.token(2), "c3")).status_code == 204
    assert {seat: await game.view(seat) for seat in (0, 1, 2, None)} == before


async def test_no_client_seed_before_the_match_starts(client, settings):
    op = await operator(client, settings)
    (_, creator), (_, other) = [
        await player(client, settings, name, 1_000, op) for name in ("ana", "bia")
    ]
    table = await create_table(client, creator, seat_count=3, entry_cents=100)
    for token in (creator, other):
        response = await client.post(f"/tables/{table['id']}/seat", headers=auth(token))
        assert response.status_code == 201, response.text
    response = await client.post(
        f"/tables/{table['id']}/client-seed",
        json={"client_seed_hex": "a1"},
        headers=auth(creator),
    )
    assert_error(response, 409, "no_round_pending")
    assert (await view(client, creator, table["id"]))["round"] is None
