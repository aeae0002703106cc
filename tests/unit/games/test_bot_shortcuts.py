"""The bot's cheap tests before a solver call only rule out hands the solver rejects.

``_fits_a_meld`` (before a claim, or before taking the discard top) is a necessary condition:
whenever it says no, ``find_close`` finds nothing, so the bot decides exactly as if it had
asked the solver. ``_closes_after_draw`` answers exactly what ``find_close`` answers, and
what the bots keep between decisions never changes one.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from typing import Any

import pytest

from app.games import HeuristicBot, new_match, resolve_options
from app.games.bots import (
    _card_scores,
    _closes_after_draw,
    _fits_a_meld,
    _link_weight,
    hand_strength,
)
from app.games.cards import CARDS_PER_DECK, identical_ids, wild_ids
from app.games.melds import JOKER, MeldRules
from app.games.simulate import bot_step
from app.games.solver import find_close, has_two_disjoint_melds

from .support import RandomChance

RULES = [
    MeldRules(),
    MeldRules(wilds_per_meld=2),
    MeldRules(set_same_suit_allowed=True),
    MeldRules(ace_high=False),
]
DECKS = 2


def _hands(rng: random.Random, count: int) -> list[tuple[list[int], int, frozenset[int]]]:
    """9-card hands plus one card, half of them drawn from a narrow band (meld-rich)."""
    cases = []
    while len(cases) < count:
        vira = rng.randrange(CARDS_PER_DECK * DECKS)
        wilds = wild_ids(vira, rng.choice(["same_suit", "same_color", "all_suits"]), DECKS)
        pool = [card for card in range(CARDS_PER_DECK * DECKS) if card != vira]
        if rng.random() < 0.5:
            start = rng.randrange(len(pool) - 16)
            band = pool[start : start + 16]
            cards = rng.sample(band, 7) + rng.sample([c for c in pool if c not in band], 3)
            rng.shuffle(cards)
        else:
            cards = rng.sample(pool, 10)
        cases.append((cards[:9], cards[9], wilds))
    return cases


@pytest.mark.parametrize("rules", RULES, ids=repr)
def test_shortcuts_never_hide_a_close(rules: MeldRules) -> None:
    rng = random.Random(20261129)
    ruled_out = 0
    for hand, card, wilds in _hands(rng, 1500):
        locks = frozenset((card, *identical_ids(card, DECKS)))
        if not _fits_a_meld(card, hand, wilds, rules):
            ruled_out += 1
            assert find_close([*hand, card], wilds, rules, locks, allow_full=False) is None
            assert find_close([*hand, card], wilds, rules, locks) is None
    assert ruled_out > 0  # the shortcut does rule hands out


@pytest.mark.parametrize("rules", RULES, ids=repr)
def test_the_close_after_a_draw_is_the_solvers(rules: MeldRules) -> None:
    rng = random.Random(20261130)
    closing = 0
    for hand, card, wilds in _hands(rng, 1500):
        after = [*hand, card]
        for locked in (frozenset(), frozenset((card,)), frozenset(rng.sample(hand, 1))):
            expected = find_close(after, wilds, rules, locked) is not None
            assert _closes_after_draw(after, card, wilds, rules, locked) == expected
            closing += expected
    assert closing > 0
    # the drawn card makes no meld with the hand: it is the only possible discard
    melds = [0, 1, 2, 19, 32, 45, 34, 35, 36]  # AC 2C 3C, 7H 7S 7D, 9S 10S JS (and KD)
    assert _closes_after_draw([*melds, 51], 51, frozenset(), rules, frozenset())
    assert not _closes_after_draw([*melds, 51], 51, frozenset(), rules, frozenset((51,)))


def _fits_by_templates(card: int, hand: list[int], wilds: frozenset[int], rules: MeldRules) -> bool:
    """``_fits_a_meld`` as first written: the templates of the card's face, one by one."""
    if card in wilds:
        return True
    present = {other % CARDS_PER_DECK for other in hand}
    jokers = sum(other in wilds for other in hand)
    for first, second in rules.tables.templates[card % CARDS_PER_DECK]:
        naturals = [slot for slot in (first, second) if slot != JOKER]
        if all(slot in present for slot in naturals) and 2 - len(naturals) <= jokers:
            return True
    return False


@pytest.mark.parametrize("rules", [*RULES, MeldRules(wilds_per_meld=0)], ids=repr)
def test_fits_a_meld_reads_the_templates_backwards_right(rules: MeldRules) -> None:
    rng = random.Random(99)
    fitting = 0
    for hand, _, wilds in _hands(rng, 300):
        for size in (9, 7, 2):
            for card in range(0, CARDS_PER_DECK * DECKS, 3):
                expected = _fits_by_templates(card, hand[:size], wilds, rules)
                assert _fits_a_meld(card, hand[:size], wilds, rules) == expected
                fitting += expected
    assert fitting > 1000


def _reference_scores(hand: list[int], wilds: frozenset[int], rules: MeldRules) -> dict[int, int]:
    """The card scores as first written: links counted pair by pair, then a meld bonus."""
    faces = [card % CARDS_PER_DECK for card in hand]
    scores = {}
    for card, face in zip(hand, faces, strict=True):
        if card in wilds:
            scores[card] = 100
            continue
        score = sum(_link_weight(face, other) for other in faces)
        present = set(faces)
        if any(
            first != JOKER and second != JOKER and first in present and second in present
            for first, second in rules.tables.templates[face]
        ):
            score += 3
        scores[card] = score
    return scores


def test_card_scores_match_the_pairwise_count() -> None:
    rng = random.Random(7)
    for rules in RULES:
        for hand, card, wilds in _hands(rng, 400):
            cards = [*hand, card]
            assert _card_scores(cards, wilds, rules) == _reference_scores(cards, wilds, rules)


class _CheckedBot(HeuristicBot):
    """A bot whose every action is checked against a bot without memos, shown a plain dict."""

    __slots__ = ("acted",)

    def __init__(self, seat: int, tie_break: int = 0) -> None:
        super().__init__(seat, tie_break)
        self.acted = 0

    def act(self, view: Mapping[str, Any]) -> dict[str, Any] | None:
        fresh = HeuristicBot(self.seat, self.tie_break)
        fresh.pile_streak = self.pile_streak  # the memory that is part of its play
        expected = fresh.act(copy.deepcopy(view))  # a deep copy is a plain dict
        action = super().act(view)
        assert action == expected
        self.acted += 1
        return action


def test_the_bots_memos_never_change_a_decision() -> None:
    """Bots that keep what they learnt (also from one match to the next, under other rules)
    act as fresh bots would."""
    seats = 4
    bots = [_CheckedBot(seat, tie_break=3) for seat in range(seats)]
    variants = [
        {},
        {"wilds_per_meld": 2, "wild_scope": "all_suits"},
        {"discard_lock_identical": True},
    ]
    for index, overrides in enumerate(variants * 2):
        match = new_match(resolve_options("cacheta-raiz", overrides), seats)
        chance = RandomChance(index)
        while not match.over:
            bot_step(match, chance, bots)
    assert sum(bot.acted for bot in bots) > 1000


def _reference_order(tie_break: int, card: int) -> int:
    """The discard tie-break as first written: a hash of the bot's ``tie_break`` and the card."""
    return (card * 2654435761 + tie_break * 40503) % 2**32


def test_the_discard_is_the_least_score_then_order() -> None:
    """The bot discards the unlocked card of least (score, tie-break order) -- with its order
    tables shared between bots and made for whole packs -- also when its ``tie_break`` changes
    and when cards of a further pack reach its hand."""
    rng = random.Random(11)
    rules = MeldRules()
    bots = [HeuristicBot(0, tie_break=5), HeuristicBot(1, tie_break=5)]
    discards = 0
    for index, (hand, card, wilds) in enumerate(_hands(rng, 600)):
        bot = bots[index % 2]
        if index % 50 == 0:
            bot.tie_break = rng.choice([0, 5, 60013, 99991])
        cards = [*hand, card]
        if index % 7 == 0:  # cards of further packs
            cards = [other + CARDS_PER_DECK * rng.randrange(4) for other in cards]
            if len(set(cards)) < len(cards):
                continue
        locked = rng.sample(cards, 2) if index % 3 == 0 else []
        action = bot._discard({"locked": locked, "drawn": None}, cards, wilds, rules)
        if action["type"] == "close":
            assert find_close(cards, wilds, rules, frozenset(locked)) is not None
            continue
        scores = _reference_scores(cards, wilds, rules)
        expected = min(
            (other for other in cards if other not in locked),
            key=lambda other: (scores[other], _reference_order(bot.tie_break, other)),
        )
        assert action["card"] == expected
        discards += 1
    assert discards > 500


def test_the_last_hands_facts_are_the_memos() -> None:
    """A bot keeps the facts of the last hand it was asked about in front of the memo: asked
    about one list changed in place, under other rules or other wild cards, it answers as a
    fresh bot does, from the facts of that hand."""
    rng = random.Random(5)
    bot = HeuristicBot(0)
    cases = _hands(rng, 400)
    held = list(cases[0][0])  # one list, changed in place as the engine changes a hand
    asked = 0
    for index, (hand, card, wilds) in enumerate(cases):
        if index % 4:
            held[rng.randrange(len(held))] = hand[0]  # a draw and a discard
        else:
            held[:] = hand
        # the same hand asked about under other rules or other wild cards, now and then
        questions = [(RULES[0], wilds)] * 2
        if index % 3 == 0:
            questions += [(RULES[index % len(RULES)], wilds), (RULES[0], frozenset())]
        for rules, shown in questions:
            facts = bot._facts_of(held, shown, rules)
            assert facts.fit_mask == _fits_mask(held, shown, rules)
            two = has_two_disjoint_melds(held, shown, rules)
            assert facts.holds_two_melds(held, shown, rules) == two
            for other in (card, hand[1] + CARDS_PER_DECK):
                expected = HeuristicBot(0).may_claim(list(held), shown, rules, other)
                assert bot.may_claim(held, shown, rules, other) == expected
                asked += expected
    assert asked > 20


def _fits_mask(hand: list[int], wilds: frozenset[int], rules: MeldRules) -> int:
    """The faces whose plain cards make a meld with two cards of ``hand`` (template by template;
    ids of a third pack are never wild here)."""
    return sum(
        1 << face
        for face in range(CARDS_PER_DECK)
        if _fits_by_templates(face + DECKS * CARDS_PER_DECK, hand, wilds, rules)
    )


def _reference_strength(hand: list[int], wilds: frozenset[int], rules: MeldRules) -> int:
    """``hand_strength`` as first written: wilds, capped links, two melds from the solver."""
    scores = _reference_scores(hand, wilds, rules)
    wild_count = sum(1 for card in hand if card in wilds)
    links = sum(min(score, 6) for card, score in scores.items() if card not in wilds) // 2
    return 3 * wild_count + links + (4 if has_two_disjoint_melds(hand, wilds, rules) else 0)


def test_mandar_is_the_strength_against_the_threshold() -> None:
    """The bot searches for two melds only when they decide mandar, and decides as
    ``hand_strength >= need`` would."""
    rng = random.Random(13)
    mandar = 0
    decided = 0
    for index, (hand, card, wilds) in enumerate(_hands(rng, 1500)):
        rules = RULES[index % len(RULES)]
        cards = [*hand, card][: 9 + index % 2]
        strength = hand_strength(cards, wilds, rules)
        assert strength == _reference_strength(cards, wilds, rules)
        for lives in (2, 3, 4, 5):
            bot = HeuristicBot(0)
            action = bot._decide({"lives": [lives]}, cards, wilds, rules, others_mandar=None)
            need = 7 + (2 if lives <= 3 else 0)
            assert action["mandar"] == (strength >= need)
            mandar += action["mandar"]
            decided += need - 4 <= strength < need  # the two melds are searched for
    assert 0 < mandar < 4 * 1500
    assert decided > 100
