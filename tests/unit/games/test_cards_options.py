"""Cards, notation, wild arithmetic (RULES.md §1 Deck, Wild card) and options/presets."""

from __future__ import annotations

import pytest

from app.games import (
    PRESETS,
    GameError,
    RummyOptions,
    card_deck,
    card_id,
    card_rank,
    card_str,
    card_suit,
    deck_ids,
    identical_ids,
    parse_card,
    parse_cards,
    resolve_options,
    wild_faces,
    wild_ids,
)
from app.games.cards import CARDS_PER_DECK, face_str

from .support import c


def test_rule_1_deck_52_cards_per_pack_no_jokers_each_with_identity() -> None:
    assert len(deck_ids(1)) == 52
    shoe = deck_ids(4)
    assert shoe == list(range(208))
    faces = {card % CARDS_PER_DECK for card in shoe}
    assert len(faces) == 52  # only the 52 standard faces: no printed jokers
    assert card_id(1, 0, 0) == 0 and card_id(13, 3, 1) == 52 + 51
    assert (card_rank(c("10C#2")), card_suit(c("10C#2")), card_deck(c("10C#2"))) == (10, 0, 2)


def test_rule_1_identical_cards_are_same_face_other_decks() -> None:
    assert identical_ids(c("7S"), 2) == (c("7S#1"),)
    assert identical_ids(c("7S#1"), 4) == (c("7S"), c("7S#2"), c("7S#3"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [("5H", "5H"), ("10c", "10C"), ("Td", "10D"), ("ah", "AH"), (" KS ", "KS"), ("qC", "QC")],
)
def test_notation_parses_case_insensitive_with_T_for_ten(text: str, expected: str) -> None:
    assert card_str(parse_card(text)) == expected


@pytest.mark.parametrize("text", ["", "1H", "11C", "5X", "H5", "10", "ZZ"])
def test_notation_rejects_unknown_cards(text: str) -> None:
    with pytest.raises(GameError) as error:
        parse_card(text)
    assert error.value.code == "invalid_card"


def test_parse_cards_gives_repeats_successive_decks_and_refuses_too_many() -> None:
    assert parse_cards(["5H", "5H", "6H"], 2) == [c("5H"), c("5H#1"), c("6H")]
    with pytest.raises(GameError):
        parse_cards(["5H", "5H", "5H"], 2)


def test_canonical_order_is_by_id() -> None:
    assert [face_str(face) for face in (0, 12, 13, 26, 39, 51)] == [
        "AC",
        "KC",
        "AH",
        "AS",
        "AD",
        "KD",
    ]


def test_rule_1_wild_is_next_rank_same_suit_king_wraps_to_ace() -> None:
    assert [face_str(face) for face in wild_faces(c("5H"), "same_suit")] == ["6H"]
    assert [face_str(face) for face in wild_faces(c("KS"), "same_suit")] == ["AS"]
    assert wild_ids(c("5H"), "same_suit", 2) == frozenset({c("6H"), c("6H#1")})
    assert len(wild_ids(c("5H"), "same_suit", 4)) == 4


def test_rule_1_wild_scope_same_color_and_all_suits() -> None:
    assert sorted(face_str(face) for face in wild_faces(c("5H"), "same_color")) == ["6D", "6H"]
    assert sorted(face_str(face) for face in wild_faces(c("5C"), "same_color")) == ["6C", "6S"]
    assert len(wild_faces(c("5C"), "all_suits")) == 4
    assert len(wild_ids(c("5C"), "all_suits", 2)) == 8


def test_preset_cacheta_raiz_options() -> None:
    raiz = PRESETS["cacheta-raiz"]
    assert raiz.meld_shape == "three_threes"
    assert raiz.wild_scope == "same_suit" and raiz.wilds_per_meld == 1 and raiz.wild_cards
    assert not raiz.full_close_allowed
    assert raiz.hand_size == 9 and raiz.lives == 7 and raiz.max_reshuffles is None
    assert (raiz.min_players, raiz.max_players) == (2, 10)
    assert (raiz.decision_timeout_ms, raiz.turn_timeout_ms, raiz.claim_window_ms) == (
        30_000,
        25_000,
        3_000,
    )
    assert raiz.abandon_after_ms == 600_000


def test_rule_3_decks_two_up_to_five_players_four_above() -> None:
    raiz = PRESETS["cacheta-raiz"]
    assert [raiz.decks_for(players) for players in range(2, 11)] == [2, 2, 2, 2, 4, 4, 4, 4, 4]


def test_rule_3_lives_option_range_1_to_20() -> None:
    assert resolve_options("cacheta-raiz", {"lives": "20"}).lives == 20
    assert resolve_options("cacheta-raiz", {"lives": 1}).lives == 1
    for bad in (0, 21, "x"):
        with pytest.raises(GameError) as error:
            resolve_options("cacheta-raiz", {"lives": bad})
        assert error.value.code == "invalid_option_value"


def test_options_round_trip_json_for_every_preset() -> None:
    for options in PRESETS.values():
        assert RummyOptions.from_dict(options.to_dict()) == options


def test_resolve_options_errors_are_machine_readable() -> None:
    with pytest.raises(GameError) as error:
        resolve_options("nope")
    assert error.value.code == "unknown_preset"
    with pytest.raises(GameError) as error:
        resolve_options("cacheta-raiz", {"colour": "red"})
    assert error.value.code == "unknown_option"
    with pytest.raises(GameError) as error:
        resolve_options("cacheta-raiz", {"wild_scope": "rainbow"})
    assert error.value.code == "invalid_option_value"
    with pytest.raises(GameError) as error:
        resolve_options("cacheta-raiz", {"hand_size": 10})  # three_threes closes 9 cards
    assert error.value.code == "invalid_option_value"


def test_resolve_options_parses_strings() -> None:
    options = resolve_options(
        "cacheta-classic",
        {"ace_high": "false", "max_reshuffles": "none", "hand_size": "10", "wilds_per_meld": "2"},
    )
    assert options.ace_high is False and options.max_reshuffles is None
    assert options.hand_size == 10 and options.wilds_per_meld == 2
    assert resolve_options("cacheta-raiz", {"decks_by_players": "[[10, 2]]"}).decks_for(10) == 2


# What RULES.md says about each rummy preset (§1 options, §2 turn, §3 cacheta-raiz, §4 classic,
# §5 casual). Options the rule book leaves to the table (timers of the non-raiz presets) are not
# listed. truco-raiz is not a rummy preset and has no RummyOptions.
EVERY_PRESET = {
    "set_same_suit_allowed": False,  # §1 Trinca: "off in every preset"
    "ace_high": True,  # §1 Sequência: default true (classic may override it)
    "wild_scope": "same_suit",  # §1 Wild card default; §3, §5 "same suit"
    "wilds_per_meld": 1,  # §1 default; §3, §5 "1 per meld"
    "hand_size": 9,  # §2: 9 per player (10 only as a classic option)
    "restricted_discard_draw": False,  # §2 default false (a classic option)
    "min_players": 2,  # §3 2 to 10, §4 2 to 4, §5 2 to 4
}
PRESET_VALUES: dict[str, dict[str, object]] = {
    "cacheta-raiz": {
        "meld_shape": "three_threes",
        "wild_cards": True,
        "wild_from_discard_is_plain": False,
        "full_close_allowed": False,
        "discard_lock_identical": False,
        "max_reshuffles": None,
        "max_players": 10,
        "decks_by_players": ((5, 2), (10, 4)),
        "lives": 7,
        "mandar_correr": True,
        "out_of_turn_claims": True,
        "decision_timeout_ms": 30_000,
        "turn_timeout_ms": 25_000,
        "claim_window_ms": 3_000,
        "abandon_after_ms": 600_000,
    },
    "pife-classic": {
        "meld_shape": "any",
        "wild_cards": False,
        "wild_from_discard_is_plain": False,
        "full_close_allowed": True,
        "discard_lock_identical": False,
        "max_reshuffles": 3,
        "max_players": 4,
        "decks_by_players": ((2, 1), (4, 2)),
        "lives": 1,  # the first close wins the match in one hand
        "first_dealer": "drawn",
        "mandar_correr": False,
        "out_of_turn_claims": False,
    },
    "cacheta-classic": {
        "meld_shape": "any",
        "wild_cards": True,
        "wild_from_discard_is_plain": False,
        "full_close_allowed": True,
        "discard_lock_identical": False,
        "max_reshuffles": 3,
        "max_players": 4,
        "decks_by_players": ((4, 2),),
        "lives": 10,  # points: 10 each
        "first_dealer": "drawn",
        "mandar_correr": False,
        "out_of_turn_claims": False,
    },
    "pife-casual": {
        "meld_shape": "any",
        "wild_cards": False,
        "wild_from_discard_is_plain": False,
        "full_close_allowed": True,
        "discard_lock_identical": True,
        "max_reshuffles": None,
        "max_players": 4,
        "decks_by_players": ((4, 2),),
        "lives": 1,  # the first close wins the match
        "first_dealer": "creator",
        "mandar_correr": False,
        "out_of_turn_claims": False,
    },
    "cacheta-casual": {
        "meld_shape": "any",
        "wild_cards": True,
        "wild_from_discard_is_plain": True,
        "full_close_allowed": True,
        "discard_lock_identical": True,
        "max_reshuffles": None,
        "max_players": 4,
        "decks_by_players": ((4, 2),),
        "lives": 7,  # lives 7 (or 10 as an option)
        "first_dealer": "creator",
        "mandar_correr": False,
        "out_of_turn_claims": False,
    },
}


def test_every_rummy_preset_of_the_rule_book_is_defined() -> None:
    assert set(PRESETS) == set(PRESET_VALUES)
    for name, options in PRESETS.items():
        assert options.ruleset == name


@pytest.mark.parametrize("preset", sorted(PRESET_VALUES))
def test_rule_2_preset_option_values_are_the_rule_books(preset: str) -> None:
    options = PRESETS[preset]
    expected = EVERY_PRESET | PRESET_VALUES[preset]
    assert {name: getattr(options, name) for name in expected} == expected
    assert resolve_options(preset) == options


def test_rule_1_wild_from_discard_is_plain_only_in_cacheta_casual() -> None:
    assert [name for name, options in PRESETS.items() if options.wild_from_discard_is_plain] == [
        "cacheta-casual"
    ]
    assert PRESETS["cacheta-raiz"].wild_from_discard_is_plain is False


def test_rule_2_ten_cards_is_a_classic_option_never_under_three_threes() -> None:
    for preset in ("pife-classic", "cacheta-classic"):
        assert resolve_options(preset, {"hand_size": 10}).hand_size == 10
    for preset in ("cacheta-raiz", "pife-casual", "cacheta-casual"):
        with pytest.raises(GameError) as error:
            resolve_options(preset, {"hand_size": 10, "meld_shape": "any"})
        assert error.value.code == "invalid_option_value", preset
        assert error.value.details["option"] == "hand_size", preset
    with pytest.raises(GameError, match="three_threes closes exactly 9 cards"):
        resolve_options("cacheta-classic", {"hand_size": 10, "meld_shape": "three_threes"})


@pytest.mark.parametrize(
    "overrides",
    [
        {"wilds_per_meld": 5},
        {"wilds_per_meld": -1},
        {"min_players": 1},
        {"max_players": 11, "decks_by_players": [[5, 2], [11, 4]]},
        {"turn_timeout_ms": 9},
        {"claim_window_ms": 7 * 24 * 3600 * 1000 + 1},
        {"max_reshuffles": -1},
        {"lives": True},
        {"decks_by_players": [[10, 9]]},
        {"decks_by_players": [[10, 0]]},
        {"decks_by_players": [[5, 2]]},
        {"decks_by_players": [[1, 2], [10, 4]]},
        {"decks_by_players": [[5, 2], [5, 4], [10, 4]]},
        {"decks_by_players": [[6, 1], [10, 4]]},
    ],
)
def test_rule_3_option_values_outside_the_rule_books_ranges_are_refused(
    overrides: dict[str, object],
) -> None:
    # §3 players 2..10 (decks_by_players must cover max_players, increasing, 1..8 decks, enough
    # cards for every hand, the vira and one draw); §1 wilds_per_meld 0..4; timers 10 ms..7 days;
    # max_reshuffles >= 0; a boolean is not a number
    with pytest.raises(GameError) as error:
        resolve_options("cacheta-raiz", overrides)
    assert error.value.code == "invalid_option_value"


def test_rule_3_option_values_at_the_edges_of_their_ranges_are_accepted() -> None:
    for overrides in (
        {"wilds_per_meld": 4},
        {"wilds_per_meld": 0},
        {"min_players": 2, "max_players": 2, "decks_by_players": [[2, 1]]},
        {"max_players": 10, "decks_by_players": [[10, 8]]},
        {"turn_timeout_ms": 10, "claim_window_ms": 7 * 24 * 3600 * 1000},
        {"max_reshuffles": 0},
        {"decks_by_players": [[2, 1], [5, 2], [10, 4]]},
    ):
        resolve_options("cacheta-raiz", overrides)
