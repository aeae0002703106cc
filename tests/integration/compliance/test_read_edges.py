"""Compliance reads at their edges: a round still in play is neither verified nor exported
(its record is not sealed), and a player's money history carries the wallet's balance and
pages back through every movement, each once."""

from __future__ import annotations

import pytest

from tests.helpers import assert_error, auth
from tests.integration.compliance.helpers import play_match, staff
from tests.integration.tables.helpers import balance
from tests.integration.tables.scenario import start_game

pytestmark = pytest.mark.asyncio


async def test_a_round_in_play_is_neither_verified_nor_exported(client, settings):
    game = await start_game(client, settings, players=2)
    auditor = await staff(client, settings)
    response = await client.get(f"/compliance/rounds?table={game.id}", headers=auth(auditor))
    assert response.status_code == 200, response.text
    [in_play] = response.json()
    assert in_play["ended_at"] is None
    for part in ("verification", "bundle"):
        refused = await client.get(
            f"/compliance/rounds/{in_play['round_id']}/{part}", headers=auth(auditor)
        )
        assert_error(refused, 409, "round_in_progress")
        assert refused.json()["details"] == {"round_id": in_play["round_id"]}


async def test_the_money_history_has_the_balance_and_pages_back_through_every_line(
    client, settings
):
    match = await play_match(client, settings, players=2, lives=1)
    auditor = await staff(client, settings)
    user_id, token = match["players"][0]
    url = f"/compliance/players/{user_id}/money"
    whole = (await client.get(url, headers=auth(auditor))).json()
    assert whole["balance_cents"] == await balance(client, token)
    assert whole["next_before_version"] is None
    lines = whole["lines"]
    assert len(lines) >= 2  # the deposit, the entry fee (and the payout of a winner)
    assert whole["balance_cents"] == sum(line["amount_cents"] for line in lines)

    paged: list[dict] = []
    before = ""
    while True:
        response = await client.get(f"{url}?limit=1{before}", headers=auth(auditor))
        assert response.status_code == 200, response.text
        page = response.json()
        assert page["balance_cents"] == whole["balance_cents"]
        paged.extend(page["lines"])
        if page["next_before_version"] is None:
            break
        assert len(page["lines"]) == 1
        assert page["next_before_version"] == page["lines"][-1]["account_version"]
        before = f"&before_version={page['next_before_version']}"
    assert paged == lines
