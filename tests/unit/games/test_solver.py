"""The closing solver against the brute-force reference, over every option of RULES.md §1."""

from __future__ import annotations

import random
from itertools import combinations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.games import (
    MeldRules,
    can_close,
    closing_discards,
    find_close,
    has_two_disjoint_melds,
    is_valid_meld,
    resolve_options,
    wild_ids,
)
from app.games.cards import CARDS_PER_DECK, identical_ids
from app.games.search import CoverSearch, HandSplit, designations
from app.games.solver import lonely_plain

from .reference import ref_block_valid, reference
from .support import c, cs

SCOPES = ("same_suit", "same_color", "all_suits")


@st.composite
def scenarios(draw: st.DrawFn, shape: str) -> dict[str, object]:
    decks = draw(st.sampled_from((1, 2, 2, 4)))
    size = 10 if shape == "three_threes" else draw(st.sampled_from((10, 11)))
    if draw(st.booleans()):
        # a dense pool (few suits, a window of ranks) so that many hands close
        suits = draw(st.sets(st.integers(0, 3), min_size=1, max_size=3))
        low = draw(st.integers(0, 9))
        ranks = set(range(low, min(13, low + draw(st.integers(3, 6))))) | {0, 12}
        pool = [
            d * 52 + s * 13 + r for d in range(decks) for s in sorted(suits) for r in sorted(ranks)
        ]
    else:
        pool = list(range(CARDS_PER_DECK * decks))
    if len(pool) < size:
        pool = list(range(CARDS_PER_DECK * decks))
    cards = draw(st.lists(st.sampled_from(pool), min_size=size, max_size=size, unique=True))
    with_wilds = draw(st.integers(0, 4)) > 0
    vira = draw(st.integers(0, 51))
    scope = draw(st.sampled_from(SCOPES))
    wilds = wild_ids(vira, scope, decks) if with_wilds else frozenset()
    locked = frozenset(draw(st.lists(st.sampled_from(cards), max_size=2)))
    rules = MeldRules(
        meld_shape=shape,
        ace_high=draw(st.booleans()),
        set_same_suit_allowed=draw(st.integers(0, 7)) == 0,
        wilds_per_meld=draw(st.sampled_from((0, 1, 1, 2))),
        full_close_allowed=shape == "any" and draw(st.booleans()),
    )
    return {"cards": cards, "wilds": wilds, "locked": locked, "rules": rules}


def check_against_reference(scenario: dict[str, object]) -> None:
    cards: list[int] = scenario["cards"]  # type: ignore[assignment]
    wilds: frozenset[int] = scenario["wilds"]  # type: ignore[assignment]
    locked: frozenset[int] = scenario["locked"]  # type: ignore[assignment]
    rules: MeldRules = scenario["rules"]  # type: ignore[assignment]
    expected = reference(
        cards,
        wilds,
        shape=rules.meld_shape,
        wpm=rules.wilds_per_meld,
        ace_high=rules.ace_high,
        same_suit=rules.set_same_suit_allowed,
        full_allowed=rules.full_close_allowed,
        locked=locked,
    )
    assert set(closing_discards(cards, wilds, rules, locked)) == expected["discards"]
    found = find_close(cards, wilds, rules, locked)
    assert (found is not None) == (bool(expected["discards"]) or bool(expected["full"]))
    assert can_close(cards, wilds, rules, locked) == (found is not None)
    assert can_close(cards, wilds, rules, locked, allow_full=False) == (
        find_close(cards, wilds, rules, locked, allow_full=False) is not None
    )
    for card in cards[:3]:
        assert can_close(cards, wilds, rules, locked, discard=card) == (
            find_close(cards, wilds, rules, locked, discard=card) is not None
        )
    if found is not None:
        placed = [card for meld in found.melds for card in meld]
        if found.discard is None:
            assert expected["full"]
        else:
            assert found.discard in expected["discards"]
            placed.append(found.discard)
        assert sorted(placed) == sorted(cards)
        for meld in found.melds:
            assert rules.size_allowed(len(meld))
            assert ref_block_valid(
                meld, wilds, rules.wilds_per_meld, rules.ace_high, rules.set_same_suit_allowed
            )
            assert is_valid_meld(meld, wilds, rules)
    nine = cards[:9]
    assert (
        has_two_disjoint_melds(nine, wilds, rules)
        == reference(
            nine,
            wilds,
            shape=rules.meld_shape,
            wpm=rules.wilds_per_meld,
            ace_high=rules.ace_high,
            same_suit=rules.set_same_suit_allowed,
        )["two_melds"]
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios("three_threes"))
def test_rule_1_solver_exact_three_threes(scenario: dict[str, object]) -> None:
    check_against_reference(scenario)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios("any"))
def test_rule_1_solver_exact_any_shape_full_close_and_11_cards(scenario: dict[str, object]) -> None:
    check_against_reference(scenario)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 3),
    st.integers(0, 12),
    st.integers(4, 9),
    st.booleans(),
    st.lists(st.integers(0, 8), max_size=2, unique=True),
)
def test_every_valid_meld_of_four_or_more_holds_a_valid_three_card_meld(
    suit: int, low: int, length: int, as_set: bool, joker_spots: list[int]
) -> None:
    """Why two disjoint 3-card melds are the whole "two melds" claim test."""
    if as_set:
        block = [s * 13 + low for s in range(4)][: min(length, 4)]
    else:
        block = [suit * 13 + (low + step) % 13 for step in range(min(length, 13 - low))]
    if len(block) < 4:
        return
    wild = c("6H")
    wilds = frozenset({wild})
    block = [
        wild if index in joker_spots[:1] and wild not in block else card
        for index, card in enumerate(block)
    ]
    if len(set(block)) != len(block) or not ref_block_valid(tuple(block), wilds, 1, True, False):
        return
    assert any(ref_block_valid(trio, wilds, 1, True, False) for trio in combinations(block, 3))


def test_rule_1_seed_examples() -> None:
    wild_6h = wild_ids(c("5H"), "same_suit", 2)
    rules = MeldRules()
    # "6 de copas fecha a trinca de noves"; two identical sevens are no trinca
    assert is_valid_meld(cs("9C 9S 6H"), wild_6h, rules)
    assert not is_valid_meld(cs("7S 7S#1 7H"), frozenset(), rules)
    # 5-6-7 de copas with the wild in its own place
    assert is_valid_meld(cs("5H 6H 7H"), wild_6h, rules)
    # vira K of spades -> the wild is the ace of spades
    assert wild_ids(c("KS"), "same_suit", 1) == frozenset({c("AS")})


def test_rule_1_two_sets_of_the_same_rank_in_one_hand() -> None:
    hand = cs("7S 7H 7C 7S#1 7H#1 7D 2C 3C 4C KD")
    found = find_close(hand, frozenset(), MeldRules())
    assert found is not None and found.discard == c("KD")


def test_rule_1_three_threes_needs_three_melds_of_three_any_takes_four_plus_five() -> None:
    hand = cs("2C 3C 4C 5C 8D 9D 10D JD QD KS")  # a run of 4 and a run of 5
    assert find_close(hand, frozenset(), MeldRules()) is None
    found = find_close(hand, frozenset(), MeldRules(meld_shape="any"))
    assert found is not None and found.discard == c("KS")


def test_rule_1_full_close_only_where_allowed_never_under_three_threes() -> None:
    hand = cs("2C 3C 4C 5C 8D 9D 10D JD QD KD")
    assert find_close(hand, frozenset(), MeldRules(meld_shape="any")).discard is not None  # type: ignore[union-attr]
    full = find_close(hand, frozenset(), MeldRules(meld_shape="any", full_close_allowed=True))
    assert full is not None and full.full
    forced = resolve_options("cacheta-raiz", {"full_close_allowed": True})
    assert not MeldRules.from_options(forced).full_close_allowed


def test_rule_1_locked_card_is_never_the_discard() -> None:
    hand = cs("AH 2H 3H 4S 5S 6S 9C 9D 9H KD")
    assert closing_discards(hand, frozenset(), MeldRules()) == (c("KD"),)
    assert find_close(hand, frozenset(), MeldRules(), frozenset({c("KD")})) is None


def test_rule_1_solver_handles_11_card_hands() -> None:
    rules = MeldRules(meld_shape="any")
    hand = cs("AC 2C 3C 4C 9H 9S 9D 9C JD QD KD")
    found = find_close(hand, frozenset(), rules)
    assert found is not None and len([card for meld in found.melds for card in meld]) == 10


# --- the boolean searches on face counts against the general search ---------------------------

FAST_PATH_RULES = [
    MeldRules(),
    MeldRules(wilds_per_meld=2),
    MeldRules(wilds_per_meld=0),
    MeldRules(set_same_suit_allowed=True),
    MeldRules(wilds_per_meld=3, set_same_suit_allowed=True),
    MeldRules(ace_high=False),
    MeldRules(full_close_allowed=True),
]


def _two_melds_by_cover_search(cards: list[int], wilds: frozenset[int], rules: MeldRules) -> bool:
    """``has_two_disjoint_melds`` as the general search answers it (CoverSearch, no cover)."""
    lonely = lonely_plain(cards, wilds, rules)
    if lonely:
        cards = [card for card in cards if card not in lonely]
    if len(cards) < 6:
        return False
    hand = HandSplit(cards, wilds, rules, filtered=False)
    search = CoverSearch(hand, rules, frozenset(), cover=False)
    for designation in designations(hand.wild, frozenset()):
        search.designate(designation)
        if search.threes(2, 1 << 30, len(designation.jokers), len(cards)):
            return True
    return False


def _dense_hands(rng: random.Random, count: int) -> list[tuple[list[int], frozenset[int], int]]:
    """10-card hands (with their wild cards and deck count), most from a narrow band of the
    shoe plus the wild cards, so that many hold melds and many close."""
    cases = []
    for _ in range(count):
        decks = rng.choice((1, 2, 2, 3))
        vira = rng.randrange(CARDS_PER_DECK * decks)
        wilds = wild_ids(vira, rng.choice(SCOPES), decks)
        pool = [card for card in range(CARDS_PER_DECK * decks) if card != vira]
        if rng.random() < 0.7:
            start = rng.randrange(len(pool) - 20)
            band = [card for card in {*pool[start : start + 20], *wilds} if card != vira]
            cards = rng.sample(sorted(band), 10)
        else:
            cards = rng.sample(pool, 10)
        cases.append((cards, wilds, decks))
    return cases


def test_two_melds_on_counts_agrees_with_the_general_search() -> None:
    rng = random.Random(20261130)
    positive = 0
    for rules in FAST_PATH_RULES:
        for cards, wilds, _ in _dense_hands(rng, 700):
            for hand in (cards[:9], cards[:7]):
                expected = _two_melds_by_cover_search(hand, wilds, rules)
                assert has_two_disjoint_melds(hand, wilds, rules) == expected, (hand, wilds, rules)
                positive += expected
    assert positive > 1000  # the hands do hold melds


def test_can_close_on_counts_agrees_with_find_close() -> None:
    rng = random.Random(20261131)
    closing = 0
    for rules in FAST_PATH_RULES:
        for cards, wilds, decks in _dense_hands(rng, 700):
            card = rng.choice(cards)
            for locked in (
                frozenset(),
                frozenset((card,)),
                frozenset((card, *identical_ids(card, decks))),
                frozenset(rng.sample(cards, 2)),
                wilds.intersection(cards[:1] + rng.sample(cards, 2)),  # locked wild cards
            ):
                for hand in (cards, cards[:9]):
                    for allow_full in (True, False):
                        found = find_close(hand, wilds, rules, locked, allow_full=allow_full)
                        assert can_close(hand, wilds, rules, locked, allow_full=allow_full) == (
                            found is not None
                        ), (hand, wilds, locked, rules, allow_full)
                        closing += found is not None
    assert closing > 500  # the hands do close


def test_a_locked_wild_card_is_never_the_discard_even_as_a_joker() -> None:
    hand = [*cs("2C 3C 4C 7H 7S 7D 9S 10S JS"), c("5D")]
    wilds = wild_ids(c("4D"), "same_suit", 2)  # the fives of diamonds
    rules = MeldRules(wilds_per_meld=0)  # the five can only stand for itself, or be discarded
    assert can_close(hand, wilds, rules)
    assert find_close(hand, wilds, rules) is not None
    assert not can_close(hand, wilds, rules, frozenset((c("5D"),)))
    assert find_close(hand, wilds, rules, frozenset((c("5D"),))) is None
