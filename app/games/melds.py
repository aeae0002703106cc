"""Meld rules (RULES.md §1): validity of one meld, and precomputed three-card templates.

Validity is decided on *faces* (``card % 52``): a wild card either stands as its own face
(a *natural-position* wild, which does not count toward ``wilds_per_meld``) or substitutes
(a *joker*). A meld is valid when some such designation gives ``naturals`` + ``jokers``
that form a set (trinca) or a run (sequência):

* at least one natural card, at most ``wilds_per_meld`` jokers, at least 3 cards;
* set: one rank; suits all different (so at most 4 cards), unless
  ``set_same_suit_allowed`` (then suits may repeat and the size is not capped);
* run: one suit, distinct positions, the span of the naturals fits in the run's length,
  at most 13 cards; ace is position 1, or 14 when ``ace_high`` (never both: no wrap).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations_with_replacement, product
from typing import TYPE_CHECKING

from app.games.cards import CARDS_PER_DECK, RANKS_PER_SUIT

if TYPE_CHECKING:
    from app.games.options import RummyOptions

__all__ = (
    "JOKER",
    "MAX_RUN_LENGTH",
    "MeldRules",
    "MeldTables",
    "faces_form_meld",
    "is_valid_meld",
    "meld_tables",
)

JOKER = -1
"""Slot value of a substituting wild in a template."""
MAX_RUN_LENGTH = 13
"""A run never repeats a rank, so it has at most 13 cards."""
MAX_SET_SUITS = 4
"""Different suits available to a set."""


@dataclass(frozen=True, slots=True)
class MeldRules:
    """The options of §1 that decide which melds and closes are valid."""

    meld_shape: str = "three_threes"
    """``three_threes`` or ``any``."""
    ace_high: bool = True
    """Q-K-A allowed."""
    set_same_suit_allowed: bool = False
    """Sets may repeat a suit."""
    wilds_per_meld: int = 1
    """Most substituting wilds per meld."""
    full_close_allowed: bool = False
    """Closing with every card in melds."""
    tables: MeldTables = field(init=False, repr=False, compare=False, hash=False)
    """Precomputed three-card templates and partner masks for these rules."""

    def __post_init__(self) -> None:
        key = (self.ace_high, self.set_same_suit_allowed, self.wilds_per_meld)
        object.__setattr__(self, "tables", _build_tables(*key))

    @classmethod
    def from_options(cls, options: RummyOptions) -> MeldRules:
        """The meld rules of a resolved option set."""
        return cls(
            meld_shape=options.meld_shape,
            ace_high=options.ace_high,
            set_same_suit_allowed=options.set_same_suit_allowed,
            wilds_per_meld=options.wilds_per_meld,
            full_close_allowed=options.full_close_allowed and options.meld_shape != "three_threes",
        )

    def size_allowed(self, size: int) -> bool:
        """Whether a meld of ``size`` cards fits ``meld_shape``."""
        return size == 3 if self.meld_shape == "three_threes" else size >= 3


def faces_form_meld(naturals: Sequence[int], jokers: int, rules: MeldRules | _TableRules) -> bool:
    """Whether natural faces plus ``jokers`` substituting wilds form a set or a run."""
    count = len(naturals)
    total = count + jokers
    if count == 0 or jokers > rules.wilds_per_meld or total < 3:
        return False
    ranks = {face % RANKS_PER_SUIT for face in naturals}
    if len(ranks) == 1:
        if rules.set_same_suit_allowed:
            return True
        suits = {face // RANKS_PER_SUIT for face in naturals}
        if len(suits) == count and total <= MAX_SET_SUITS:
            return True
    if total > MAX_RUN_LENGTH or len({face // RANKS_PER_SUIT for face in naturals}) != 1:
        return False
    low = [face % RANKS_PER_SUIT + 1 for face in naturals]
    systems = [low]
    if rules.ace_high:
        systems.append([14 if rank == 1 else rank for rank in low])
    return any(
        len(set(positions)) == count and max(positions) - min(positions) + 1 <= total
        for positions in systems
    )


def is_valid_meld(cards: Iterable[int], wilds: frozenset[int] | set[int], rules: MeldRules) -> bool:
    """Whether the card ids form one valid meld for a player whose wild cards are ``wilds``.

    Only the meld itself is checked; the size demanded by ``meld_shape`` is checked by the
    caller (``MeldRules.size_allowed``).
    """
    naturals: list[int] = []
    wild_faces: dict[int, int] = {}
    for card in cards:
        face = card % CARDS_PER_DECK
        if card in wilds:
            wild_faces[face] = wild_faces.get(face, 0) + 1
        else:
            naturals.append(face)
    faces = sorted(wild_faces)
    for as_jokers in product(*(range(wild_faces[face] + 1) for face in faces)):
        jokers = sum(as_jokers)
        standing = [
            face
            for face, used in zip(faces, as_jokers, strict=True)
            for _ in range(wild_faces[face] - used)
        ]
        if faces_form_meld(naturals + standing, jokers, rules):
            return True
    return False


@dataclass(frozen=True, slots=True)
class MeldTables:
    """Precomputed three-card melds per face, for one (ace_high, same-suit, wilds) rule set."""

    templates: tuple[tuple[tuple[int, int], ...], ...]
    """For each face f, the ``(a, b)`` completions making ``{f, a, b}`` a valid 3-meld with f
    natural; ``a``/``b`` are faces or :data:`JOKER`; all-natural ones first."""
    partners: tuple[int, ...]
    """For each face f, a bit mask of the faces g such that f and g are both natural in some
    valid 3-meld (the faces a natural card needs next to it when a meld has <= 1 joker)."""
    upper: tuple[tuple[tuple[int, int], ...], ...]
    """For each face f, the ``templates`` of f whose natural faces are all ``>= f``, in the
    same order: a search that always places the lowest face left never needs the others."""


@dataclass(frozen=True, slots=True)
class _TableRules:
    ace_high: bool
    set_same_suit_allowed: bool
    wilds_per_meld: int


def _neighbour_faces(face: int) -> list[int]:
    rank = face % RANKS_PER_SUIT
    suit_base = face - rank
    same_rank = [suit * RANKS_PER_SUIT + rank for suit in range(4)]
    same_suit = [suit_base + (rank + delta) % RANKS_PER_SUIT for delta in (-2, -1, 1, 2)]
    return sorted(set(same_rank + same_suit))


def meld_tables(rules: MeldRules) -> MeldTables:
    """Templates and partner masks for ``rules``."""
    return rules.tables


@lru_cache(maxsize=32)
def _build_tables(ace_high: bool, set_same_suit_allowed: bool, wilds_per_meld: int) -> MeldTables:
    rules = _TableRules(ace_high, set_same_suit_allowed, wilds_per_meld)
    templates = []
    partners = []
    for face in range(CARDS_PER_DECK):
        slots = [*_neighbour_faces(face), JOKER]
        found = []
        for first, second in combinations_with_replacement(slots, 2):
            naturals = [face] + [slot for slot in (first, second) if slot != JOKER]
            jokers = (first == JOKER) + (second == JOKER)
            if faces_form_meld(naturals, jokers, rules):
                found.append((first, second) if first != JOKER else (second, first))
        found.sort(key=lambda pair: ((pair[0] == JOKER) + (pair[1] == JOKER), pair))
        templates.append(tuple(found))
        mask = 0
        for pair in found:
            for slot in pair:
                if slot != JOKER:
                    mask |= 1 << slot
        partners.append(mask)
    upper = tuple(
        tuple(pair for pair in pairs if all(slot == JOKER or slot >= face for slot in pair))
        for face, pairs in enumerate(templates)
    )
    return MeldTables(templates=tuple(templates), partners=tuple(partners), upper=upper)
