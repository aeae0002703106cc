"""RULES.md §3 Record: the event log alone rebuilds every round card by card."""

from __future__ import annotations

from typing import Any

from app.games import HeuristicBot, play_match, resolve_options
from app.games.events import (
    Closed,
    Dealt,
    Discarded,
    DrewDiscard,
    DrewStock,
    Event,
    Reshuffled,
    RoundStarted,
)

from .support import RandomChance


class Rebuilt:
    """Hands, stock and pile rebuilt from events only."""

    def __init__(self) -> None:
        self.hands: dict[int, list[int]] = {}
        self.stock: list[int] = []  # top first
        self.pile: list[int] = []
        self.vira: int | None = None

    def apply(self, event: Event) -> None:
        if isinstance(event, RoundStarted):
            self.hands, self.stock, self.pile, self.vira = {}, [], [], None
        elif isinstance(event, Dealt):
            self.hands = {
                seat: list(cards) for seat, cards in zip(event.seats, event.hands, strict=True)
            }
            self.stock = list(event.stock)
            self.vira = event.vira
        elif isinstance(event, DrewStock):
            assert self.stock.pop(0) == event.card
            self.hands[event.seat].append(event.card)
        elif isinstance(event, DrewDiscard):
            assert self.pile.pop() == event.card
            self.hands[event.seat].append(event.card)
        elif isinstance(event, Discarded):
            self.hands[event.seat].remove(event.card)
            self.pile.append(event.card)
        elif isinstance(event, Reshuffled):
            assert sorted(self.pile[:-1]) == sorted(event.stock) and self.pile[-1] == event.kept
            self.stock, self.pile = list(event.stock), [event.kept]
        elif isinstance(event, Closed):
            if event.claimed_card is not None:
                assert self.pile.pop() == event.claimed_card
                self.hands[event.seat].append(event.claimed_card)
            if event.discard is not None:
                self.hands[event.seat].remove(event.discard)
                self.pile.append(event.discard)
            assert sorted(card for meld in event.melds for card in meld) == sorted(
                self.hands[event.seat]
            )


def test_rule_3_record_events_rebuild_each_round_card_by_card() -> None:
    options = resolve_options("cacheta-raiz", {"lives": 2})
    for seed in range(40):
        seats = 2 + seed % 5
        rebuilt = Rebuilt()

        def observe(match: Any, events: tuple[Event, ...], rebuilt: Rebuilt = rebuilt) -> None:
            for event in events:
                rebuilt.apply(event)
            current = match.round
            if current is None or current.phase == "deal":
                return
            assert rebuilt.hands == current.hands
            assert rebuilt.stock == current.stock_top_first()
            assert rebuilt.pile == current.pile and rebuilt.vira == current.vira

        bots = [HeuristicBot(seat, tie_break=seed) for seat in range(seats)]
        match = play_match(options, seats, RandomChance(seed), bots, observe)
        assert match.over


class SleepyBot(HeuristicBot):
    """Lets its turn timer run out in most turns (long rounds: reshuffles, drawn rounds)."""

    __slots__ = ("turns",)

    def __init__(self, seat: int, tie_break: int) -> None:
        super().__init__(seat, tie_break)
        self.turns = 0

    def act(self, view: dict[str, Any]) -> dict[str, Any] | None:
        current = view.get("round")
        if current and current["phase"] in ("draw", "discard") and current["turn"] == self.seat:
            self.turns += 1
            if self.turns % 10:
                return None
        return super().act(view)


def test_rule_3_record_rebuilds_rounds_with_reshuffles_and_claims() -> None:
    options = resolve_options("cacheta-raiz", {"lives": 2, "max_reshuffles": 2})
    seen: set[str] = set()
    for seed in range(12):
        seats = 2 + seed % 3
        rebuilt = Rebuilt()

        def observe(match: Any, events: tuple[Event, ...], rebuilt: Rebuilt = rebuilt) -> None:
            for event in events:
                rebuilt.apply(event)
                seen.add(event.type)
            current = match.round
            if current is not None and current.phase != "deal":
                assert rebuilt.hands == current.hands
                assert rebuilt.stock == current.stock_top_first()
                assert rebuilt.pile == current.pile

        bots = [SleepyBot(seat, seed) for seat in range(seats)]
        play_match(options, seats, RandomChance(seed), bots, observe)
    assert {"reshuffled", "drew_discard", "closed"} <= seen
