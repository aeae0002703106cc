"""RULES.md §1 meld rules, one test per rule, on single melds (``is_valid_meld``)."""

from __future__ import annotations

from app.games import MeldRules, is_valid_meld, wild_ids
from app.games.melds import faces_form_meld

from .support import c, cs

RAIZ = MeldRules()
ANY = MeldRules(meld_shape="any")
NO_WILDS: frozenset[int] = frozenset()


def valid(cards: str, wilds: frozenset[int] = NO_WILDS, rules: MeldRules = RAIZ) -> bool:
    return is_valid_meld(cs(cards), wilds, rules)


def test_rule_1_set_is_three_or_four_of_a_rank_all_different_suits() -> None:
    assert valid("7H 7S 7C")
    assert valid("7H 7S 7C 7D")
    assert not valid("7H 7S")
    assert not valid("7H 7S 8C")
    assert not valid("7H 7S 7C 7D 7D#1")


def test_rule_1_identical_cards_never_share_a_set() -> None:
    assert not valid("7S 7S#1 7H")
    assert not valid("7S 7S#1 7H 7C")


def test_rule_1_option_set_same_suit_allowed_lets_a_set_repeat_a_suit() -> None:
    rules = MeldRules(set_same_suit_allowed=True)
    assert is_valid_meld(cs("7S 7S#1 7H"), NO_WILDS, rules)
    assert is_valid_meld(cs("7S 7S#1 7H 7C 7D"), NO_WILDS, rules)
    assert not is_valid_meld(cs("7S 7S#1 8S"), NO_WILDS, rules)


def test_rule_1_run_is_three_or_more_consecutive_of_one_suit_no_repeated_rank() -> None:
    assert valid("4D 5D 6D")
    assert valid("4D 5D 6D 7D 8D 9D", rules=ANY)
    assert not valid("4D 5D 6C")
    assert not valid("4D 5D 7D")
    assert not valid("4D 5D 5D#1 6D", rules=ANY)
    assert valid("AH 2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH", rules=ANY)


def test_rule_1_ace_low_or_high_never_wraps() -> None:
    assert valid("AH 2H 3H")
    assert valid("QH KH AH")
    assert not valid("KH AH 2H")
    assert not valid("QH KH AH 2H", rules=ANY)
    low_only = MeldRules(ace_high=False)
    assert is_valid_meld(cs("AH 2H 3H"), NO_WILDS, low_only)
    assert not is_valid_meld(cs("QH KH AH"), NO_WILDS, low_only)


def test_rule_1_a_wild_never_makes_a_run_wrap_round_the_ace() -> None:
    wilds = wild_ids(c("5S"), "same_suit", 2)  # 6S is wild
    assert valid("QH KH 6S", wilds)  # J-Q-K or Q-K-A
    assert valid("KH AH 6S", wilds)  # Q-K-A
    assert valid("AH 3H 6S", wilds)  # A-2-3
    assert not valid("KH 2H 6S", wilds)  # only as K-A-2
    assert not valid("KH 6S 2H 3H", wilds, ANY)  # K-A-2-3
    low_only = MeldRules(ace_high=False)
    assert not is_valid_meld(cs("KH AH 6S"), wilds, low_only)  # ace low only: K-A never
    assert is_valid_meld(cs("AH 2H 6S"), wilds, low_only)


def test_rule_1_wild_substitutes_any_missing_card_of_a_set_or_run() -> None:
    wilds = wild_ids(c("5H"), "same_suit", 2)  # 6H is wild
    assert valid("9C 9D 6H", wilds)  # a nine of any other suit
    assert valid("4S 6H 6S", wilds)  # 5S missing in the middle
    assert valid("6H 9S 10S", wilds)  # an end of the run
    assert valid("QC KC 6H", wilds)  # J or A
    assert not valid("9C 8D 6H", wilds)


def test_rule_1_a_wild_never_makes_a_fifth_card_of_a_set() -> None:
    # a trinca has 3 or 4 cards of different suits: with all four suits there, a wild has no
    # missing card to stand in for (as a joker), whatever the meld size allowed
    wilds = wild_ids(c("5H"), "same_suit", 2)  # 6H is wild
    assert valid("9C 9D 9S 6H", wilds, ANY)
    assert not valid("9C 9D 9S 9H 6H", wilds, ANY)
    assert not is_valid_meld(
        cs("9C 9D 9S 9H 6H"), wilds, MeldRules(meld_shape="any", wilds_per_meld=2)
    )
    assert not faces_form_meld(cs("9C 9D 9S 9H"), 1, ANY)


def test_rule_1_at_most_wilds_per_meld_substituting_wilds() -> None:
    wilds = wild_ids(c("5H"), "all_suits", 2)  # every 6 is wild
    assert not valid("9C 6S 6D", wilds)
    assert is_valid_meld(cs("9C 6S 6D"), wilds, MeldRules(wilds_per_meld=2))
    assert not is_valid_meld(cs("9C 6S 6D"), wilds, MeldRules(wilds_per_meld=0))
    assert is_valid_meld(cs("9C 9S 9D"), wilds, MeldRules(wilds_per_meld=0))


def test_rule_1_wild_in_its_natural_place_does_not_count_toward_the_limit() -> None:
    wilds = wild_ids(c("5H"), "same_suit", 2)  # 6H and 6H#1 are wild
    assert valid("5H 6H 7H", wilds)  # natural position, no substitution at all
    assert valid("5H 6H 6H#1", wilds)  # one natural 6H, one substituting (as 4H or 7H)
    assert valid("6H 6C 6S#1", wilds)  # the wild as a six in a trinca of sixes
    four = MeldRules(meld_shape="any")
    assert is_valid_meld(cs("6H 6C 6S 6H#1"), wilds, four)  # natural 6H + one substituting 6D


def test_rule_1_every_meld_needs_a_card_that_is_not_substituting() -> None:
    generous = MeldRules(wilds_per_meld=3)
    # three substituting wilds alone are never a meld, however many substitutes are allowed
    assert not faces_form_meld([], 3, generous)
    assert faces_form_meld([c("9S")], 2, generous)
    # a wild card can always stand as itself: three sixes of different suits are a set
    wilds = wild_ids(c("5H"), "all_suits", 2)
    assert is_valid_meld(cs("6C 6S 6D"), wilds, MeldRules(wilds_per_meld=0))


def test_rule_1_wild_scope_same_color_wilds_substitute() -> None:
    wilds = wild_ids(c("5H"), "same_color", 2)  # 6H and 6D
    assert valid("9C 9S 6D", wilds)
    assert not valid("9C 9S 6C", wilds)


def test_rule_1_meld_shape_sizes() -> None:
    assert RAIZ.size_allowed(3) and not RAIZ.size_allowed(4)
    assert ANY.size_allowed(3) and ANY.size_allowed(7) and not ANY.size_allowed(2)


def test_rule_1_a_run_never_repeats_a_rank_so_a_wild_never_makes_a_fourteenth_card() -> None:
    wilds = wild_ids(c("5S"), "same_suit", 2)  # 6S is wild
    thirteen = "AH 2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH"
    assert valid(thirteen, wilds, ANY)
    assert not valid(f"{thirteen} 6S", wilds, ANY)  # the 14th card would repeat a rank
    assert not faces_form_meld(list(range(13)), 1, ANY)
