"""What each viewer gets over HTTP (PRODUCT.md: no player ever sees another player's hidden
cards or the stock order).  The engine's full view of the table's match state is the ground
truth: at several moments, every card id under a card-valued key of a player's view (and of
its events) is in their own hand or public; a spectator's view holds public cards only."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import auth
from tests.integration.tables.scenario import SLOW_TIMERS, Game, card_ids_in, cards, start_game

pytestmark = pytest.mark.asyncio

HANDS = {
    0: ["9C", "2D", "5S", "8S", "JS", "3H", "QC", "6D", "10D"],
    1: ["4H", "8H", "JD", "KC", "10S", "3D", "7S", "QS", "KH"],
    2: ["2H", "6C", "9D", "QH", "4D", "8D", "5H", "10C", "3C"],
    3: ["2C", "3C", "4C", "5H", "6H", "7H", "9S", "9H", "QD"],  # two melds: may claim
}
PUBLIC_KEYS = {
    "seats",
    "decks",
    "options",
    "lives",
    "marra",
    "eliminated",
    "dealer",
    "round_number",
    "over",
    "winner",
    "placements",
    "waiting_for_chance",
    "deadline",
    "last_result",
    "round",
}
PUBLIC_ROUND_KEYS = {
    "number",
    "dealer",
    "phase",
    "seats",
    "hand_counts",
    "stock_count",
    "pile",
    "vira",
    "wilds",
    "decisions",
    "players",
    "turn",
    "turn_number",
    "taken_from_pile",
    "burned",
    "claim_window",
    "reshuffles",
}
PLAYER_ROUND_KEYS = {
    "hand",
    "plain_wilds",
    "my_decision",
    "mandar_count",
    "drawn",
    "locked",
    "claimed",
    "can_close",
    "holds_two_melds",
}
TABLE_KEYS = {
    "id",
    "game",
    "preset",
    "status",
    "seat_count",
    "seated",
    "lives",
    "fill_deadline_at",
    "created_at",
    "currency",
    "entry_cents",
    "pool_cents",
    "fee_bps",
    "fee_cents",
    "net_prize_cents",
    "net_prize_if_full_cents",
    "step",
    "seats",
    "you",
    "frozen",
    "timer",
    "result",
    "round",
    "game_view",
    "events",
}


async def check_every_view(game: Game, players: int = 4) -> None:
    """Each player sees its own hand and public cards only; the spectator public cards only."""
    truth = await game.truth()
    round_ = truth["round"]
    hands = {seat: set(cards_) for seat, cards_ in round_["hands"]}
    stock = set(round_["stock"])
    public = set(round_["pile"]) | {round_["vira"]}
    for seat in [*range(players), None]:
        seen = await game.view(seat)
        assert set(seen) == TABLE_KEYS
        game_view = seen["game_view"]
        mine = hands[seat] if seat is not None else set()
        others = set().union(*(cards_ for other, cards_ in hands.items() if other != seat))
        shown = card_ids_in(game_view) | card_ids_in(seen["events"])
        assert shown <= mine | public, (seat, sorted(shown - mine - public))
        assert not shown & (others | stock)
        if seat is None:
            assert seen["you"] == {"match_seat": None, "spectator": True}
            assert set(game_view) == PUBLIC_KEYS
            assert set(game_view["round"]) == PUBLIC_ROUND_KEYS
        else:
            assert seen["you"] == {"match_seat": seat, "spectator": False}
            assert set(game_view) == PUBLIC_KEYS | {"you"}
            assert set(game_view["round"]) >= PUBLIC_ROUND_KEYS
            assert set(game_view["round"]) <= PUBLIC_ROUND_KEYS | PLAYER_ROUND_KEYS
            assert game_view["round"]["hand"] == next(
                cards_ for other, cards_ in round_["hands"] if other == seat
            )
        for event in seen["events"]:
            assert "hands" not in event and "stock" not in event
            if event["type"] == "dealt":
                assert event["hand"] == (None if seat is None else game_view["round"]["hand"])
            if event["type"] == "drew_stock" and event["seat"] != seat:
                assert "card" not in event


async def test_no_view_shows_another_hand_or_the_stock(client, settings):
    game = await start_game(
        client,
        settings,
        players=4,
        dealer=3,
        hands=HANDS,
        stock=["5C", "AH"],
        options={"lives": 3, **SLOW_TIMERS},
    )
    # the deal (the last change's events include every hand, redacted per viewer)
    assert {e["type"] for e in (await game.view(None))["events"]} >= {"dealt", "round_started"}
    await check_every_view(game)

    for seat in range(4):
        await game.decide(seat, True)
    await check_every_view(game)

    # a card drawn from the stock is the drawer's secret
    drew = await game.act(0, "draw_stock")
    assert drew["game_view"]["round"]["drawn"] == cards("5C")[0]
    await check_every_view(game)

    # a claim is the claimant's secret until the window closes
    await game.act(0, "discard", card=cards("9C")[0])
    await game.act(3, "claim")
    await check_every_view(game)
    assert (await game.game(3))["round"]["claimed"] is True
    for seat in (0, 1, 2):
        assert (await game.game(seat))["round"]["claimed"] is False
    assert "claims" not in (await game.game(None))["round"]


async def test_a_spectator_or_a_stranger_sees_public_information_only(client, settings):
    game = await start_game(
        client, settings, players=2, dealer=0, options={"lives": 3, **SLOW_TIMERS}
    )
    watched = await game.view(None)
    assert watched["you"]["spectator"] is True
    assert watched["game_view"]["round"]["hand_counts"] == [[1, 9], [0, 9]]
    assert "hand" not in watched["game_view"]["round"]
    anonymous = await client.get(f"/tables/{game.id}")
    assert anonymous.status_code == 401
    listed = (await client.get("/tables", headers=auth(game.spectator))).json()
    assert all("game_view" not in table and "seats" not in table for table in listed)
    rows: list[dict[str, Any]] = [table for table in listed if table["id"] == game.id]
    assert rows and rows[0]["status"] == "running"
