"""Exact closing detection (RULES.md §1): partitions into melds, closing discards, claims.

``find_close`` is the hot path of the server and of the bots; ``closing_discards`` answers
``raiz rules check-hand``; ``has_two_disjoint_melds`` gates a claim (bater fora da vez).
Exactness is checked against a brute-force reference over every option
(``tests/unit/games/test_solver.py``); the algorithm is described in
:mod:`app.games.search`.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.games.cards import CARDS_PER_DECK
from app.games.melds import MeldRules, is_valid_meld
from app.games.options import RummyOptions
from app.games.search import CloseResult, CoverSearch, HandSplit, designations, lonely_plain, solve

__all__ = (
    "CloseResult",
    "can_close",
    "closing_discards",
    "find_close",
    "forms_meld_with",
    "has_two_disjoint_melds",
)

_NO_CARDS: frozenset[int] = frozenset()
_MANY = 1 << 30  # "unlimited" skips when looking for melds inside a hand
_DEFAULT_RULES = MeldRules()

Rules = MeldRules | RummyOptions | None
"""Meld rules, or resolved options (their meld rules are used), or None (cacheta-raiz)."""


def _meld_rules(rules: Rules) -> MeldRules:
    if rules is None:
        return _DEFAULT_RULES
    if isinstance(rules, MeldRules):
        return rules
    return MeldRules.from_options(rules)


def find_close(
    cards: Sequence[int],
    wilds: frozenset[int] | set[int] = _NO_CARDS,
    rules: Rules = None,
    locked: frozenset[int] = _NO_CARDS,
    *,
    discard: int | None = None,
    allow_full: bool = True,
) -> CloseResult | None:
    """A close of the hand ``cards`` (after the draw), or ``None`` when it cannot close.

    ``wilds`` are the card ids that are wild for this player; ``locked`` cards may not be the
    discard. With ``discard`` given, only closes discarding that card are considered. A full
    close (every card in melds) is preferred when the rules allow it and ``allow_full``.
    """
    rules = _meld_rules(rules)
    if discard is not None:
        if discard in locked or discard not in cards:
            return None
        rest = list(cards)
        rest.remove(discard)
        found = solve(rest, wilds, rules, locked, 0)
        return None if found is None else CloseResult(found.melds, discard)
    if allow_full and rules.full_close_allowed:
        found = solve(cards, wilds, rules, locked, 0)
        if found is not None:
            return found
    return solve(cards, wilds, rules, locked, 1)


def can_close(
    cards: Sequence[int],
    wilds: frozenset[int] | set[int] = _NO_CARDS,
    rules: Rules = None,
    locked: frozenset[int] = _NO_CARDS,
) -> bool:
    """Whether ``find_close`` finds any close."""
    return find_close(cards, wilds, rules, locked) is not None


def closing_discards(
    cards: Sequence[int],
    wilds: frozenset[int] | set[int] = _NO_CARDS,
    rules: Rules = None,
    locked: frozenset[int] = _NO_CARDS,
) -> tuple[int, ...]:
    """Every card id whose discard closes the hand (ordinary close), sorted."""
    rules = _meld_rules(rules)
    lonely = lonely_plain(cards, wilds, rules)
    if lonely is not None and len(lonely) > 1:
        return ()
    verdicts: dict[tuple[int, bool], bool] = {}
    closing = []
    for card in sorted(cards):
        if card in locked or (lonely and card not in lonely):
            continue
        kind = (card % CARDS_PER_DECK, card in wilds)
        if kind not in verdicts:
            verdicts[kind] = find_close(cards, wilds, rules, locked, discard=card) is not None
        if verdicts[kind]:
            closing.append(card)
    return tuple(closing)


def has_two_disjoint_melds(
    cards: Sequence[int],
    wilds: frozenset[int] | set[int] = _NO_CARDS,
    rules: Rules = None,
) -> bool:
    """Whether the hand holds two valid melds with no card in common (the claim condition).

    Any valid meld of 4+ cards contains a valid 3-card meld, so 3-card melds suffice.
    """
    rules = _meld_rules(rules)
    lonely = lonely_plain(cards, wilds, rules)
    if lonely:
        cards = [card for card in cards if card not in lonely]  # they fit in no meld
    if len(cards) < 6:
        return False
    hand = HandSplit(cards, wilds, rules, filtered=False)
    search = CoverSearch(hand, rules, _NO_CARDS, cover=False)
    for designation in designations(hand.wild, _NO_CARDS):
        search.designate(designation)
        if search.threes(2, _MANY, len(designation.jokers), len(cards)):
            return True
    return False


def forms_meld_with(
    card: int,
    hand: Sequence[int],
    wilds: frozenset[int] | set[int] = _NO_CARDS,
    rules: Rules = None,
) -> bool:
    """Whether ``card`` makes a valid 3-card meld with two cards of ``hand`` (restricted draw)."""
    rules = _meld_rules(rules)
    others = list(hand)
    return any(
        is_valid_meld((card, others[first], others[second]), wilds, rules)
        for first in range(len(others))
        for second in range(first + 1, len(others))
    )
