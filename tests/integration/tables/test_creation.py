"""Creating and starting tables: every refused request answers its code and creates nothing.
This module runs like production as far as timers go: creators cannot shorten them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import make_settings
from tests.helpers import assert_error, auth
from tests.integration.tables.helpers import create_table, operator, player, view

pytestmark = pytest.mark.asyncio


@pytest.fixture
def settings(database_url):
    """No timer overrides (the production rule)."""
    return make_settings(database_url, presence_grace_s=3600, scheduler_poll_interval_s=0.05)


async def post_table(client: Any, token: str, **body: Any) -> Any:
    return await client.post(
        "/tables", json={"seat_count": 4, "entry_cents": 500, **body}, headers=auth(token)
    )


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"preset": "truco-raiz"}, "unknown_preset"),
        ({"preset": "pife-classic"}, "unknown_preset"),  # named, not playable yet
        ({"preset": "cacheta-classic"}, "unknown_preset"),  # a cacheta preset, not playable
        ({"preset": "no-such-game"}, "unknown_preset"),
        ({"seat_count": 1}, "validation_error"),
        ({"seat_count": 11}, "validation_error"),
        ({"entry_cents": -1}, "validation_error"),
        ({"entry_cents": 100_000_001}, "validation_error"),
        # money is a JSON integer of centavos: no strings, floats or booleans
        ({"entry_cents": "500"}, "validation_error"),
        ({"entry_cents": 500.0}, "validation_error"),
        ({"entry_cents": True}, "validation_error"),
        ({"fill_deadline_s": 9}, "validation_error"),
        ({"colour": "green"}, "validation_error"),
        ({"options": {"decision_timeout_ms": 1_000}}, "option_not_allowed"),
        ({"options": {"turn_timeout_ms": 1_000}}, "option_not_allowed"),
        ({"options": {"claim_window_ms": 10}}, "option_not_allowed"),
        ({"options": {"abandon_after_ms": 1_000}}, "option_not_allowed"),
        ({"options": {"wild_cards": 0}}, "option_not_allowed"),
        ({"options": {"lives": 0}}, "invalid_option_value"),
        ({"options": {"lives": 21}}, "invalid_option_value"),
    ],
)
async def test_an_invalid_table_is_refused_and_nothing_is_created(client, settings, body, code):
    op = await operator(client, settings)
    _, token = await player(client, settings, "creator", 0, op)
    response = await post_table(client, token, **body)
    assert_error(response, 400, code)
    listed = await client.get("/tables", headers=auth(token))
    assert listed.status_code == 200 and listed.json() == []


async def test_a_valid_table_records_its_options(client, settings):
    op = await operator(client, settings)
    _, token = await player(client, settings, "creator", 0, op)
    response = await post_table(client, token, seat_count=2, entry_cents=0, options={"lives": 5})
    assert response.status_code == 201, response.text
    table = response.json()
    assert table["status"] == "open" and table["lives"] == 5 and table["seated"] == 0
    assert table["entry_cents"] == 0 and table["net_prize_cents"] == 0
    seen = await view(client, token, table["id"])
    assert seen["game_view"] is None and seen["round"] is None


async def test_only_the_creator_starts_and_only_with_two_players(client, settings):
    op = await operator(client, settings)
    players = [await player(client, settings, f"player{i}", 1_000, op) for i in range(3)]
    (_, creator), (_, second), (_, outsider) = players
    table = await create_table(client, creator, seat_count=4, entry_cents=500)
    start, seat = f"/tables/{table['id']}/start", f"/tables/{table['id']}/seat"
    assert (await client.post(seat, headers=auth(creator))).status_code == 201
    before = await view(client, creator, table["id"])
    alone = await client.post(start, headers=auth(creator))
    refused = assert_error(alone, 422, "not_enough_players")
    assert refused["details"] == {"seated": 1, "minimum": 2}
    assert await view(client, creator, table["id"]) == before
    assert (await client.post(seat, headers=auth(second))).status_code == 201
    before = await view(client, creator, table["id"])
    for token in (second, outsider, op):
        assert_error(await client.post(start, headers=auth(token)), 403, "not_creator")
    assert await view(client, creator, table["id"]) == before
    started = await client.post(start, headers=auth(creator))
    assert started.status_code == 200, started.text
    assert started.json()["status"] == "running"
    assert started.json()["game_view"]["seats"] == 2
    assert_error(await client.post(start, headers=auth(creator)), 409, "table_started")
