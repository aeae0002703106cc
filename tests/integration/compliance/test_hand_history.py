"""A player's own hand history (docs/compliance.md, "A player's own hand history"): their own
cards, and of the others' cards only those shown to everybody -- never a hand, a stock card
someone else drew, or the stock order."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.helpers import auth
from tests.integration.compliance.helpers import play_match
from tests.integration.tables.scenario import card_ids_in, sql

pytestmark = pytest.mark.asyncio

PUBLIC_CARD_EVENTS = {
    "discarded": ("card",),
    "drew_discard": ("card",),
    "claim_window_opened": ("card",),
    "claim_window_ended": ("card",),
    "claim_resolved": ("card",),
    "closed": ("melds", "discard", "claimed_card"),
    "reshuffled": ("kept",),
}
"""Events whose cards everybody at the table sees (discards, the closer's melds...)."""


def cards_seat_may_know(log: list[dict[str, Any]], seat: int) -> set[int]:
    """Every card of a round that ``seat`` saw: its own hand and stock draws, and the
    public cards (vira, wilds, discards, the closer's melds), from the round's full log."""
    known: set[int] = set()
    for event in log:
        kind = event["type"]
        if kind == "dealt":
            known |= card_ids_in({"vira": event["vira"], "card": event["wilds"]})
            if seat in event["seats"]:
                known |= set(event["hands"][event["seats"].index(seat)])
        elif kind == "drew_stock" and event["seat"] == seat:
            known.add(event["card"])
        for field in PUBLIC_CARD_EVENTS.get(kind, ()):
            known |= card_ids_in({"card": event[field]})
    return known


async def test_the_hand_history_shows_no_card_the_player_did_not_see(client, settings):
    match = await play_match(client, settings, players=3, lives=3)
    for _, token in match["players"]:
        response = await client.get("/players/me/hands?limit=50", headers=auth(token))
        assert response.status_code == 200, response.text
        hands = response.json()
        assert hands
        for hand in hands:
            rows = await sql(
                settings,
                "SELECT body FROM game.round_log WHERE round_id = :round AND kind = 'event'"
                " ORDER BY seq",
                round=uuid.UUID(hand["round_id"]),
            )
            log = [body for (body,) in rows]
            seat = hand["seat"]
            known = cards_seat_may_know(log, seat)
            shown = card_ids_in(hand["events"]) | card_ids_in(hand["summary"])
            assert shown <= known, (hand["round_id"], seat, sorted(shown - known))
            assert not any("stock" in event or "hands" in event for event in hand["events"])
            others_draws = [
                event
                for event in hand["events"]
                if event["type"] == "drew_stock" and event["seat"] != seat
            ]
            assert all("card" not in event for event in others_draws)
            dealt = next((event for event in hand["events"] if event["type"] == "dealt"), None)
            if dealt is not None and seat in dealt["seats"]:
                full = next(event for event in log if event["type"] == "dealt")
                assert dealt["hand"] == full["hands"][full["seats"].index(seat)]
