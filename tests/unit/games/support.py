"""Test helpers: cards by notation, rigged deals, and a ``random``-based chance source."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence

import pytest

from app.games import CachetaMatch, GameError, new_match, parse_card, resolve_options
from app.games.cards import CARDS_PER_DECK

CLOSED9 = "AH 2H 3H 4S 5S 6S 9C 9D 9H"  # three melds
TWO_MELDS_NEEDS_9 = "AH 2H 3H 4S 5S 6S 9C 9D KC"  # closes with a nine (9H or 9S), discarding KC
DISCARDER = "9H 2D 3S 4H 5D 7S 8H 10C JD"  # seat 1 in the claim tests; discards 9H


def refuse(code: str, action: Callable[..., object], *args: object) -> None:
    """``action(*args)`` raises ``GameError`` with ``code``."""
    with pytest.raises(GameError) as error:
        action(*args)
    assert error.value.code == code


def c(text: str) -> int:
    """Card id from notation; ``"5H#1"`` is the 5 of hearts of deck 1."""
    name, _, deck = text.partition("#")
    return parse_card(name) + CARDS_PER_DECK * int(deck or 0)


def cs(texts: str) -> list[int]:
    """Several cards: ``cs("5H 6H 7H#1")``."""
    return [c(text) for text in texts.split()]


def junk_hand(shift: int, deck: int = 0, size: int = 9) -> list[int]:
    """Cards with no partner: ranks 2..10, suit (rank + shift) % 4 (same-suit ranks 4 apart)."""
    return [
        deck * CARDS_PER_DECK + ((rank + shift) % 4) * 13 + rank - 1 for rank in range(2, 2 + size)
    ]


class RandomChance:
    """``ChanceSource`` over ``random.Random`` (tests only)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def randbelow(self, round_number: int, label: str, n: int) -> int:
        return self.rng.randrange(n)

    def permutation(self, round_number: int, label: str, n: int) -> list[int]:
        order = list(range(n))
        self.rng.shuffle(order)
        return order


def rigged_order(
    match: CachetaMatch,
    hands: dict[int, Sequence[int]],
    vira: int | None,
    stock: Sequence[int] = (),
) -> list[int]:
    """The deal permutation that gives ``hands`` (seat -> cards, in deal order), then the vira,
    then ``stock`` on top of the stock; seats not in ``hands`` get junk hands."""
    current = match.round
    assert current is not None and current.phase == "deal"
    size = match.options.hand_size
    seats = current.seats
    chosen: dict[int, list[int]] = {seat: list(hands[seat]) for seat in hands}
    given = [card for cards in chosen.values() for card in cards] + list(stock)
    assert len(set(given)) == len(given), "the rigged hands repeat a card"
    used = set(given)
    if vira is not None:
        used.add(vira)
    candidates = [junk_hand(shift, deck) for deck in range(match.decks) for shift in range(4)]
    for seat in seats:
        if seat in chosen:
            continue
        for junk in candidates:
            if not used & set(junk):
                chosen[seat] = junk
                used |= set(junk)
                break
        else:
            raise AssertionError("not enough junk cards")
    order: list[int] = []
    for index in range(size):
        order.extend(chosen[seat][index] for seat in seats)
    if vira is not None:
        order.append(vira)
    order.extend(stock)
    order.extend(card for card in range(CARDS_PER_DECK * match.decks) if card not in set(order))
    return order


def start(
    seats: int = 4,
    *,
    dealer: int = 0,
    hands: dict[int, Sequence[int]] | None = None,
    vira: str | None = "KD",
    stock: Iterable[int] = (),
    options: dict[str, object] | None = None,
    lives: Sequence[int] | None = None,
) -> CachetaMatch:
    """A match at the deciding phase of round 1 with a rigged deal."""
    match = new_match(resolve_options("cacheta-raiz", options or {}), seats)
    if lives is not None:
        match.lives = list(lives)
    match.apply_chance(dealer)
    vira_id = c(vira) if vira else None
    match.apply_chance(rigged_order(match, hands or {}, vira_id, list(stock)))
    return match


def decide_all(match: CachetaMatch, choices: dict[int, bool] | None = None) -> None:
    """Every undecided seat decides (default mandar); non-dealers first, then the dealer."""
    current = match.round
    assert current is not None
    choices = choices or {}
    for seat in current.seats:
        if seat != current.dealer and seat not in current.decisions:
            match.decide(seat, choices.get(seat, True))
    match.decide(current.dealer, choices.get(current.dealer, True))


def play(seats: int = 4, **kwargs: object) -> CachetaMatch:
    """``start`` then everybody mandar: round 1 in its first draw phase."""
    choices = kwargs.pop("choices", None)
    match = start(seats, **kwargs)  # type: ignore[arg-type]
    decide_all(match, choices)  # type: ignore[arg-type]
    return match


def hand(match: CachetaMatch, seat: int) -> list[int]:
    assert match.round is not None
    return list(match.round.hands[seat])


def types(events: Iterable[object]) -> list[str]:
    return [event.type for event in events]  # type: ignore[attr-defined]


def seat_two_takes_the_discarded_wild(hands: dict[int, list[int]], plain: bool) -> CachetaMatch:
    """Vira 5H (6H is wild): seat 1 draws and discards its 6H, and seat 2 takes it from the
    pile, under ``wild_from_discard_is_plain`` = ``plain``."""
    match = play(hands=hands, vira="5H", options={"wild_from_discard_is_plain": plain})
    match.draw_stock(1)
    match.discard(1, c("6H"))
    match.claim_window_closed()
    match.draw_discard(2)
    return match
