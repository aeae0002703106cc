"""Exact closing detection (RULES.md §1): partitions into melds, closing discards, claims.

``find_close`` is the hot path of the server and of the bots; ``closing_discards`` answers
``raiz rules check-hand``; ``has_two_disjoint_melds`` gates a claim (bater fora da vez).
Exactness is checked against a brute-force reference over every option
(``tests/unit/games/test_solver.py``); the algorithm is described in
:mod:`app.games.search`.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

from app.games.cards import CARDS_PER_DECK, faces_mask
from app.games.melds import JOKER, MeldRules, is_valid_meld
from app.games.options import RummyOptions
from app.games.search import (
    CloseResult,
    CountSearch,
    CoverSearch,
    Designation,
    HandSplit,
    designations,
)

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


def _to_result(
    plain: dict[int, list[int]],
    designation: Designation,
    path: list[tuple[int, ...]],
    locked: frozenset[int],
) -> CloseResult:
    pools = {face: list(cards) for face, cards in plain.items()}
    for face, standing in designation.standing.items():
        pools.setdefault(face, []).extend(standing)
    jokers = list(designation.jokers)
    discard = None
    melds = []
    for step in path:
        if len(step) == 1:
            pool = jokers if step[0] == JOKER else pools[step[0]]
            discard = next(card for card in pool if card not in locked)
            pool.remove(discard)
    for step in path:
        if len(step) > 1:
            meld = [jokers.pop() if face == JOKER else pools[face].pop() for face in step]
            melds.append(tuple(sorted(meld)))
    return CloseResult(melds=tuple(sorted(melds)), discard=discard)


def lonely_plain(
    cards: Sequence[int], wilds: frozenset[int] | set[int], rules: MeldRules
) -> list[int] | None:
    """Non-wild cards whose face has no partner face in the hand (None: filter not exact).

    When at most one wild substitutes per meld, every meld holds two natural cards, so such
    a card can only be the discard.
    """
    if rules.wilds_per_meld > 1 or rules.set_same_suit_allowed:
        return None
    partners = rules.tables.partners
    present = faces_mask(cards)
    return [
        card
        for card in cards
        if not partners[card % CARDS_PER_DECK] & present and card not in wilds
    ]


def solve(
    cards: Sequence[int],
    wilds: frozenset[int] | set[int],
    rules: MeldRules,
    locked: frozenset[int],
    skips: int,
) -> CloseResult | None:
    """Cover every card with melds, leaving exactly ``skips`` (0 or 1) unlocked discards."""
    three = rules.meld_shape == "three_threes"
    if three and len(cards) != 9 + skips:
        return None
    lonely = lonely_plain(cards, wilds, rules)
    if lonely is not None and len(lonely) > skips:
        return None
    if lonely and skips:
        # the partnerless card is the only possible discard
        forced = lonely[0]
        if forced in locked:
            return None
        rest = list(cards)
        rest.remove(forced)
        found = solve(rest, wilds, rules, locked, 0)
        return None if found is None else CloseResult(found.melds, forced)
    hand = HandSplit(cards, wilds, rules, lonely is not None)
    search = CoverSearch(hand, rules, locked, cover=True)
    joker_cap = 3 * rules.wilds_per_meld + skips if three else len(cards)
    for designation in designations(hand.wild, locked):
        if len(designation.jokers) > joker_cap:
            continue
        if lonely is not None and hand.lonely_wild:
            standing_lonely = sum(len(designation.standing[face]) for face in hand.lonely_wild)
            if len(lonely) + standing_lonely > skips:
                continue
        search.designate(designation)
        jokers = len(designation.jokers)
        covered = (
            search.threes(3, skips, jokers, len(cards))
            if three
            else search.any_cover(skips, jokers)
        )
        if covered:
            return _to_result(hand.plain, designation, search.path, locked)
    return None


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
    *,
    discard: int | None = None,
    allow_full: bool = True,
) -> bool:
    """Whether ``find_close`` finds any close (for three melds of three, by a search that
    does not build the close)."""
    rules = _meld_rules(rules)
    if rules.meld_shape != "three_threes":
        found = find_close(cards, wilds, rules, locked, discard=discard, allow_full=allow_full)
        return found is not None
    if discard is not None:
        if discard in locked or discard not in cards:
            return False
        rest = list(cards)
        rest.remove(discard)
        return _threes_close(rest, wilds, rules, locked, 0)
    if allow_full and rules.full_close_allowed and _threes_close(cards, wilds, rules, locked, 0):
        return True
    return _threes_close(cards, wilds, rules, locked, 1)


def _threes_close(
    cards: Sequence[int],
    wilds: frozenset[int] | set[int],
    rules: MeldRules,
    locked: frozenset[int],
    skips: int,
) -> bool:
    """``solve(cards, wilds, rules, locked, skips) is not None`` for three melds of three:
    the same filters, designations and search (``search.threes_cover``), on face counts."""
    if len(cards) != 9 + skips:
        return False
    tables = rules.tables
    partners = tables.partners
    filtered = rules.wilds_per_meld <= 1 and not rules.set_same_suit_allowed
    present = faces_mask(cards)
    if filtered:
        lonely = [
            card
            for card in cards
            if not partners[card % CARDS_PER_DECK] & present and card not in wilds
        ]
        if len(lonely) > skips:
            return False
        if lonely:  # the partnerless card is the only possible discard
            if lonely[0] in locked:
                return False
            rest = list(cards)
            rest.remove(lonely[0])
            return _threes_close(rest, wilds, rules, locked, 0)
    count = [0] * CARDS_PER_DECK
    plain: dict[int, list[int]] = {}
    wild: dict[int, list[int]] = {}
    for card in cards:
        face = card % CARDS_PER_DECK
        if card in wilds:
            wild.setdefault(face, []).append(card)
        else:
            count[face] += 1
            plain.setdefault(face, []).append(card)
    search = CountSearch(count, sorted(plain.keys() | wild.keys()), tables.upper)
    discardable: list[bool] | None = None
    if locked:
        discardable = search.discardable = [True] * CARDS_PER_DECK
        for card in locked:
            face = card % CARDS_PER_DECK
            if face in plain:
                discardable[face] = any(other not in locked for other in plain[face])
    lonely_wild = [face for face in wild if filtered and not partners[face] & present]
    joker_cap = 3 * rules.wilds_per_meld + skips
    if not wild:
        return search.cover(3, skips, 0)
    if len(wild) == 1:
        face, copies = next(iter(wild.items()))
        if locked.isdisjoint(copies):
            # designations() in short: the first ``jokers`` copies substitute, the rest stand
            held = len(plain.get(face, ()))
            plain_discardable = discardable is not None and discardable[face] and held > 0
            # with no joker, any cover holds one copy standing in a meld (with no joker: one
            # may sit there) or as the discard: as a joker it covers as well, so unless no
            # joker may sit in a meld, no cover is looked for with every copy standing
            least = 1 if rules.wilds_per_meld >= 1 else 0
            for substituting in range(least, min(len(copies), joker_cap) + 1):
                standing = len(copies) - substituting
                if lonely_wild and standing > skips:
                    continue  # standing wilds with no partner could only be discards
                count[face] = held + standing
                if discardable is not None:
                    discardable[face] = standing > 0 or plain_discardable
                search.joker_discardable = substituting > 0
                if search.cover(3, skips, substituting):
                    return True
            return False
    for designation in designations(wild, locked):
        jokers = designation.jokers
        if len(jokers) > joker_cap:
            continue
        if lonely_wild and sum(len(designation.standing[face]) for face in lonely_wild) > skips:
            continue  # standing wilds with no partner could only be discards
        for face, stand in designation.standing.items():
            natural = plain.get(face, [])
            count[face] = len(natural) + len(stand)
            if discardable is not None:
                discardable[face] = any(card not in locked for card in (*natural, *stand))
        search.joker_discardable = any(card not in locked for card in jokers)
        if search.cover(3, skips, len(jokers)):
            return True
    return False


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

    Any valid meld of 4+ cards contains a valid 3-card meld, so 3-card melds suffice. The
    search (``search.two_melds``) runs on face counts, for every split of the wild cards
    into natural-standing and joker copies.
    """
    rules = _meld_rules(rules)
    tables = rules.tables
    partners = tables.partners
    # with at most one joker per meld, a plain card with no partner face fits in no meld
    filtered = rules.wilds_per_meld <= 1 and not rules.set_same_suit_allowed
    present = faces_mask(cards)
    count = [0] * CARDS_PER_DECK
    wild: dict[int, int] = {}
    faces = set()
    for card in cards:
        face = card % CARDS_PER_DECK
        if card in wilds:
            wild[face] = wild.get(face, 0) + 1
        elif filtered and not partners[face] & present:
            continue
        else:
            count[face] += 1
        faces.add(face)
    if sum(count[face] for face in faces) + sum(wild.values()) < 6:
        return False
    search = CountSearch(count, sorted(faces), tables.upper)
    if not wild:
        return search.two_melds(0)
    # two melds with every wild card standing have no joker: a wild card of either made a
    # joker stands for its face in that meld (or sits out, as it did), so unless no joker may
    # sit in a meld, the split with every wild card standing is not tried
    skip_standing = rules.wilds_per_meld >= 1
    if len(wild) == 1 and skip_standing and sum(wild.values()) == 1:
        return search.two_melds(1)  # (the one split left)
    wild_faces = sorted(wild)
    held = [count[face] for face in wild_faces]
    for split in product(*(range(wild[face] + 1) for face in wild_faces)):
        if skip_standing and not any(split):
            continue
        for face, plain, jokers in zip(wild_faces, held, split, strict=True):
            count[face] = plain + wild[face] - jokers
        if search.two_melds(sum(split)):
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
