"""Cards with identity, their notation, and the vira/wild arithmetic.

A card is an integer id ``deck * 52 + suit * 13 + (rank - 1)``: rank 1..13 (A=1, J=11, Q=12,
K=13), suit 0..3 in the order ``C H S D``, deck 0..decks-1. The *face* of a card is
``id % 52``: two cards with the same face from different decks are *identical cards*.
Canonical card order is the order of ids; a shoe of ``decks`` packs is ``range(52 * decks)``.
Notation is rank then suit, e.g. ``5H``, ``10C`` (``T`` is accepted for ten), case-insensitive.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.games.errors import GameError

__all__ = (
    "CARDS_PER_DECK",
    "RANKS_PER_SUIT",
    "SUITS",
    "WILD_SCOPES",
    "Card",
    "card_deck",
    "card_face",
    "card_id",
    "card_rank",
    "card_str",
    "card_suit",
    "cards_str",
    "deck_ids",
    "face_str",
    "faces_mask",
    "identical_ids",
    "parse_card",
    "parse_cards",
    "wild_faces",
    "wild_ids",
    "wild_rank",
)

CARDS_PER_DECK = 52
"""Cards in one standard pack (no printed jokers)."""
RANKS_PER_SUIT = 13
"""Ranks A..K."""
SUITS = "CHSD"
"""Suit letters in suit-index order: clubs, hearts, spades, diamonds."""
_RANK_NAMES = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
_RANK_BY_NAME = {name: index + 1 for index, name in enumerate(_RANK_NAMES)} | {"T": 10}
_SUIT_COLOR = (0, 1, 0, 1)  # clubs and spades black (0), hearts and diamonds red (1)
WILD_SCOPES = ("same_suit", "same_color", "all_suits")
"""Values of the ``wild_scope`` option."""


def card_id(rank: int, suit: int, deck: int = 0) -> int:
    """The id of the card of ``rank`` (1..13) and ``suit`` (0..3) in pack ``deck``."""
    if not (1 <= rank <= RANKS_PER_SUIT and 0 <= suit < len(SUITS) and deck >= 0):
        raise ValueError(f"no card with rank {rank}, suit {suit}, deck {deck}")
    return deck * CARDS_PER_DECK + suit * RANKS_PER_SUIT + rank - 1


def card_face(card: int) -> int:
    """Rank and suit without the deck: ``suit * 13 + rank - 1`` (0..51)."""
    return card % CARDS_PER_DECK


def faces_mask(cards: Iterable[int]) -> int:
    """The faces present among ``cards`` as a bit mask (bit ``f`` for face ``f``)."""
    mask = 0
    for card in cards:
        mask |= 1 << (card % CARDS_PER_DECK)
    return mask


def card_rank(card: int) -> int:
    """Rank 1..13 (A=1)."""
    return card % RANKS_PER_SUIT + 1


def card_suit(card: int) -> int:
    """Suit index 0..3 (C, H, S, D)."""
    return card % CARDS_PER_DECK // RANKS_PER_SUIT


def card_deck(card: int) -> int:
    """Index of the pack the card belongs to."""
    return card // CARDS_PER_DECK


def face_str(face: int) -> str:
    """Notation of a face (0..51), e.g. ``10C``."""
    return _RANK_NAMES[face % RANKS_PER_SUIT] + SUITS[face // RANKS_PER_SUIT]


def card_str(card: int) -> str:
    """Notation of a card (the deck index is not part of the notation)."""
    return face_str(card % CARDS_PER_DECK)


def cards_str(cards: Iterable[int]) -> list[str]:
    """Notation of several cards, in the given order."""
    return [card_str(card) for card in cards]


def deck_ids(decks: int) -> list[int]:
    """All card ids of a shoe of ``decks`` packs, in canonical order."""
    return list(range(CARDS_PER_DECK * decks))


def identical_ids(card: int, decks: int) -> tuple[int, ...]:
    """The other cards with the same face as ``card`` in a shoe of ``decks`` packs."""
    face = card % CARDS_PER_DECK
    return tuple(
        face + deck * CARDS_PER_DECK
        for deck in range(decks)
        if face + deck * CARDS_PER_DECK != card
    )


def parse_card(text: str, deck: int = 0) -> int:
    """Parse notation such as ``5H``, ``10c``, ``Td``; the card of pack ``deck``."""
    token = text.strip().upper()
    if len(token) < 2 or token[-1] not in SUITS or token[:-1] not in _RANK_BY_NAME:
        raise GameError("invalid_card", f"unknown card {text!r}", {"card": text})
    return card_id(_RANK_BY_NAME[token[:-1]], SUITS.index(token[-1]), deck)


def parse_cards(texts: Sequence[str], decks: int) -> list[int]:
    """Parse several cards; repeated faces get successive deck indexes (at most ``decks``)."""
    seen: dict[int, int] = {}
    cards = []
    for text in texts:
        face = parse_card(text)
        copies = seen.get(face, 0)
        if copies >= decks:
            raise GameError(
                "invalid_card",
                f"{text!r} appears more than {decks} times ({decks} decks)",
                {"card": text, "decks": decks},
            )
        seen[face] = copies + 1
        cards.append(face + copies * CARDS_PER_DECK)
    return cards


def wild_rank(vira: int) -> int:
    """The rank after the vira's (after K comes A)."""
    return card_rank(vira) % RANKS_PER_SUIT + 1


def wild_faces(vira: int, scope: str) -> tuple[int, ...]:
    """Faces of the wild cards for ``vira`` under ``wild_scope`` (sorted)."""
    rank = wild_rank(vira)
    suit = card_suit(vira)
    if scope == "same_suit":
        suits: Iterable[int] = (suit,)
    elif scope == "same_color":
        suits = (other for other in range(4) if _SUIT_COLOR[other] == _SUIT_COLOR[suit])
    elif scope == "all_suits":
        suits = range(4)
    else:
        raise ValueError(f"unknown wild scope {scope!r}")
    return tuple(sorted(other * RANKS_PER_SUIT + rank - 1 for other in suits))


def wild_ids(vira: int, scope: str, decks: int) -> frozenset[int]:
    """Every card id of the shoe that is wild for ``vira``."""
    return frozenset(
        face + deck * CARDS_PER_DECK for face in wild_faces(vira, scope) for deck in range(decks)
    )


@dataclass(frozen=True, slots=True, order=True)
class Card:
    """A physical card: its id orders cards canonically."""

    id: int
    """``deck * 52 + suit * 13 + rank - 1``."""

    @classmethod
    def of(cls, rank: int, suit: int, deck: int = 0) -> Card:
        """The card of ``rank`` (1..13), ``suit`` (0..3), ``deck``."""
        return cls(card_id(rank, suit, deck))

    @property
    def rank(self) -> int:
        """1..13, A=1."""
        return card_rank(self.id)

    @property
    def suit(self) -> int:
        """0..3 for C, H, S, D."""
        return card_suit(self.id)

    @property
    def deck(self) -> int:
        """Pack index."""
        return card_deck(self.id)

    @property
    def face(self) -> int:
        """Rank and suit only (0..51)."""
        return card_face(self.id)

    def __str__(self) -> str:
        return card_str(self.id)
