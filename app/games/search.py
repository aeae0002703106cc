"""The depth-first cover search of the closing solver (:mod:`app.games.solver` drives it).

The search works on face counts, not card ids: identical cards are interchangeable for
meld validity, so the hand becomes ``count[face]`` plus a number of jokers.

1. *Designation*: each wild card either stands as its natural face or is a joker. Every
   split of the wild copies of each wild face is tried (with the locked copies put on
   either side, so a lock never hides a possible discard).
2. *Depth-first cover*: the lowest natural face still in hand is either the discard (once,
   if an unlocked copy exists) or belongs to a meld that contains it as a natural card --
   for ``three_threes`` one of its precomputed 3-card templates, for ``any`` every set and
   every run window through it. Jokers are only ever placed in a meld next to a natural, so
   lone leftover jokers can only be the discard.
3. The face-level answer is mapped back to card ids (the discard gets an unlocked copy).

Before searching, :mod:`app.games.solver` runs a cheap exact filter when every meld holds at
least two natural cards (``wilds_per_meld <= 1``): each non-wild card kept in melds needs a
*partner* face in the hand, so two partnerless cards mean no close (one means it must be
the discard).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import product

from app.games.cards import CARDS_PER_DECK, RANKS_PER_SUIT
from app.games.melds import JOKER, MAX_RUN_LENGTH, MeldRules

__all__ = (
    "CloseResult",
    "CountSearch",
    "CoverSearch",
    "Designation",
    "HandSplit",
    "designations",
)


@dataclass(frozen=True, slots=True)
class CloseResult:
    """A way to close: the melds (card ids, each sorted; melds sorted) and the discard."""

    melds: tuple[tuple[int, ...], ...]
    """Every card of the hand but the discard, partitioned into valid melds."""
    discard: int | None
    """The card discarded by the close; ``None`` for a full close."""

    @property
    def full(self) -> bool:
        """Whether this is a full close (no discard)."""
        return self.discard is None


class Designation:
    """One natural/joker split of the wild cards: per wild face, the standing and joker ids."""

    __slots__ = ("jokers", "standing")

    def __init__(self, standing: dict[int, list[int]], jokers: list[int]) -> None:
        self.standing = standing
        """Wild face -> wild card ids standing as that natural face."""
        self.jokers = jokers
        """Wild card ids substituting (jokers)."""


def designations(wild: dict[int, list[int]], locked: frozenset[int]) -> Iterator[Designation]:
    if not wild:
        yield Designation({}, [])
        return
    faces = sorted(wild)
    if len(faces) == 1 and locked.isdisjoint(wild[faces[0]]):
        # (the general case below gives the same designations when no wild copy is locked)
        face = faces[0]
        copies = wild[face]
        for split in range(len(copies) + 1):
            yield Designation({face: copies[split:]}, copies[:split])
        return
    choices = []
    for face in faces:
        copies = wild[face]
        unlocked = [card for card in copies if card not in locked]
        held = [card for card in copies if card in locked]
        options = []
        for split in range(len(copies) + 1):
            low = max(0, split - len(unlocked))
            high = min(split, len(held))
            # only the extremes matter: a lock only restricts which copy may be discarded
            for locked_jokers in sorted({low, high}):
                options.append(held[:locked_jokers] + unlocked[: split - locked_jokers])
        choices.append(options)
    for picked in product(*choices):
        standing = {}
        jokers: list[int] = []
        for face, as_jokers in zip(faces, picked, strict=True):
            standing[face] = [card for card in wild[face] if card not in as_jokers]
            jokers.extend(as_jokers)
        yield Designation(standing, jokers)


class CoverSearch:
    """Depth-first cover of a hand under one designation; ``path`` records melds and discard."""

    __slots__ = (
        "count",
        "cover",
        "discardable",
        "failed",
        "hand",
        "joker_discardable",
        "locked",
        "order",
        "path",
        "rules",
        "tables",
    )

    def __init__(
        self, hand: HandSplit, rules: MeldRules, locked: frozenset[int], cover: bool
    ) -> None:
        self.rules = rules
        # the lowest face left is always the one placed: templates with a lower face never fit
        self.tables = rules.tables.upper
        self.cover = cover
        self.hand = hand
        self.locked = locked
        self.count = list(hand.count)
        # None: nothing is locked, every face may be the discard
        self.discardable: list[bool] | None = None
        if locked:
            # only a face with a locked copy may lack an unlocked one (the other faces in
            # hand are discardable; designate() sets the wild faces)
            discardable = [True] * CARDS_PER_DECK
            plain = hand.plain
            for card in locked:
                face = card % CARDS_PER_DECK
                if face in plain:
                    discardable[face] = any(other not in locked for other in plain[face])
            self.discardable = discardable
        self.joker_discardable = False
        self.order = hand.faces
        self.path: list[tuple[int, ...]] = []
        self.failed: set[tuple[int, ...]] = set()

    def designate(self, designation: Designation) -> None:
        """Reset the counts of the wild faces for ``designation``."""
        count = self.count
        plain = self.hand.plain
        locked = self.locked
        discardable = self.discardable
        for face, standing in designation.standing.items():
            copies = plain.get(face, ())
            count[face] = len(copies) + len(standing)
            if discardable is not None:
                discardable[face] = any(card not in locked for card in (*copies, *standing))
        self.joker_discardable = any(card not in locked for card in designation.jokers)
        self.path.clear()
        self.failed.clear()

    def may_discard(self, face: int) -> bool:
        """Whether an unlocked natural copy of ``face`` exists."""
        return self.discardable is None or self.discardable[face]

    def lowest(self) -> int:
        count = self.count
        for face in self.order:
            if count[face]:
                return face
        return JOKER

    # --- three cards per meld (three_threes, and "two melds" inside any hand) -------------
    def threes(self, need: int, skips: int, jokers: int, left: int) -> bool:
        """Find ``need`` more 3-card melds among the ``left`` remaining cards."""
        count = self.count
        for face in self.order:
            if count[face]:
                break
        else:
            face = JOKER
        if need == 0:
            if not self.cover or (face == JOKER and jokers == 0):
                return True
            # cover mode: what is left must be exactly the one discard
            if skips and face == JOKER and jokers == 1 and self.joker_discardable:
                self.path.append((JOKER,))
                return True
            if (
                skips
                and face != JOKER
                and jokers == 0
                and count[face] == 1
                and self.may_discard(face)
            ):
                count[face] = 0
                if self.lowest() == JOKER:
                    self.path.append((face,))
                    return True
                count[face] = 1
            return False
        if face == JOKER or left < 3 * need:
            return False
        count[face] -= 1
        path = self.path
        for first, second in self.tables[face]:
            used = 0
            if first == JOKER:
                used = 1 if second != JOKER else 2
                if used > jokers:
                    continue
            else:
                if not count[first]:
                    continue
                if second == JOKER:
                    if not jokers:
                        continue
                    used = 1
                elif not count[second] or (second == first and count[first] < 2):
                    continue
            if first != JOKER:
                count[first] -= 1
            if second != JOKER:
                count[second] -= 1
            path.append((face, first, second))
            if self.threes(need - 1, skips, jokers - used, left - 3):
                return True
            path.pop()
            if first != JOKER:
                count[first] += 1
            if second != JOKER:
                count[second] += 1
        if skips and (not self.cover or self.may_discard(face)):
            path.append((face,))
            if self.threes(need, skips - 1, jokers, left - 1):
                return True
            path.pop()
        count[face] += 1
        return False

    # --- melds of three or more cards (meld_shape = any) ------------------------------------
    def any_cover(self, skips: int, jokers: int) -> bool:
        count = self.count
        face = self.lowest()
        if face == JOKER:
            if jokers == 0:
                return skips == 0  # the discard must have been made
            if jokers == 1 and skips == 1 and self.joker_discardable:
                self.path.append((JOKER,))
                return True
            return False
        key = (*[count[other] for other in self.order], jokers, skips)
        if key in self.failed:
            return False
        count[face] -= 1
        if skips and self.may_discard(face):
            self.path.append((face,))
            if self.any_cover(skips - 1, jokers):
                return True
            self.path.pop()
        for others, used in self._melds_through(face, min(jokers, self.rules.wilds_per_meld)):
            for other in others:
                count[other] -= 1
            self.path.append((face, *others, *([JOKER] * used)))
            if self.any_cover(skips, jokers - used):
                return True
            self.path.pop()
            for other in others:
                count[other] += 1
        count[face] += 1
        self.failed.add(key)
        return False

    def _melds_through(self, face: int, joker_cap: int) -> Iterator[tuple[list[int], int]]:
        """Every meld (other natural faces, jokers) containing ``face`` as a natural card."""
        count = self.count
        rank = face % RANKS_PER_SUIT
        suit_base = face - rank
        same_rank = [suit * RANKS_PER_SUIT + rank for suit in range(4)]
        if self.rules.set_same_suit_allowed:
            ranges = [range(count[other] + 1) for other in same_rank]
            for picked in product(*ranges):
                others = [
                    other
                    for other, times in zip(same_rank, picked, strict=True)
                    for _ in range(times)
                ]
                for used in range(joker_cap + 1):
                    if len(others) + used >= 2:
                        yield others, used
        else:
            available = [other for other in same_rank if other != face and count[other]]
            for picked in product((False, True), repeat=len(available)):
                others = [other for other, take in zip(available, picked, strict=True) if take]
                for used in range(joker_cap + 1):
                    if 2 <= len(others) + used <= 3:
                        yield others, used
        positions = [rank + 1] + ([14] if rank == 0 and self.rules.ace_high else [])
        for position in positions:
            yield from self._runs_through(suit_base, position, joker_cap)

    def _runs_through(
        self, suit_base: int, position: int, joker_cap: int
    ) -> Iterator[tuple[list[int], int]]:
        """Run windows [low, high] through ``position`` (1..14) with at most ``joker_cap``
        places left for jokers; windows widen outward and stop once too much is missing."""
        count = self.count
        # an ace at 1 never runs to 14 and the reverse (no wrap); at most 13 cards
        floor = 2 if position == 14 else 1
        ceiling = 13 if position == 1 or not self.rules.ace_high else 14

        def face_at(spot: int) -> int:
            return suit_base + (spot - 1) % RANKS_PER_SUIT

        below_missing = 0
        for low in range(position, max(floor, position - MAX_RUN_LENGTH + 1) - 1, -1):
            if low < position and not count[face_at(low)]:
                below_missing += 1
                if below_missing > joker_cap:
                    break
            missing = below_missing
            for high in range(position, min(ceiling, low + MAX_RUN_LENGTH - 1) + 1):
                if high > position and not count[face_at(high)]:
                    missing += 1
                    if missing > joker_cap:
                        break
                if high - low + 1 < 3:
                    continue
                present = [
                    face_at(spot)
                    for spot in range(low, high + 1)
                    if spot != position and count[face_at(spot)]
                ]
                for extra in range(joker_cap - missing + 1):
                    for dropped in _subsets(len(present), extra):
                        kept = [slot for index, slot in enumerate(present) if index not in dropped]
                        yield kept, missing + extra


def _subsets(size: int, pick: int) -> Iterator[frozenset[int]]:
    if pick == 0:
        yield frozenset()
        return
    if pick > size:
        return
    for first in range(size):
        for rest in _subsets(size - first - 1, pick - 1):
            yield frozenset({first} | {first + 1 + index for index in rest})


class HandSplit:
    """A hand split by face into plain and wild cards."""

    __slots__ = ("count", "faces", "lonely_wild", "plain", "wild")

    def __init__(
        self,
        cards: Sequence[int],
        wilds: frozenset[int] | set[int],
        rules: MeldRules,
        filtered: bool,
    ) -> None:
        plain: dict[int, list[int]] = {}
        wild: dict[int, list[int]] = {}
        count = [0] * CARDS_PER_DECK
        present = 0
        for card in cards:
            face = card % CARDS_PER_DECK
            present |= 1 << face
            if card in wilds:
                if face in wild:
                    wild[face].append(card)
                else:
                    wild[face] = [card]
            else:
                count[face] += 1
                if face in plain:
                    plain[face].append(card)
                else:
                    plain[face] = [card]
        self.plain = plain
        """Face -> plain (non-wild) card ids."""
        self.wild = wild
        """Face -> wild card ids."""
        self.count = count
        """Plain copies per face."""
        self.faces = sorted(plain.keys() | wild.keys())
        """Every face in the hand, ascending."""
        self.lonely_wild: frozenset[int] = frozenset()
        """Wild faces with no partner face in the hand (when the filter applies)."""
        if filtered and wild:
            partners = rules.tables.partners
            self.lonely_wild = frozenset(face for face in wild if not partners[face] & present)


# --- boolean searches on face counts (three_threes closes, two melds in hand) ---------------
# The same depth-first search as CoverSearch.threes, without the designation objects, the
# card-id bookkeeping or the path: they only answer yes or no. solver.can_close and
# solver.has_two_disjoint_melds use them; tests/unit/games/test_solver.py checks them against
# the general search and the brute-force reference.


class CountSearch:
    """3-card melds taken from face counts; every method restores ``count`` before returning.

    Templates come from ``upper`` (``MeldTables.upper``): the face placed is always the lowest
    one left, so templates with a lower face never fit.
    """

    __slots__ = ("count", "discardable", "joker_discardable", "order", "upper")

    def __init__(
        self, count: list[int], order: list[int], upper: tuple[tuple[tuple[int, int], ...], ...]
    ) -> None:
        self.count = count
        """Natural copies per face (wild faces: per designation)."""
        self.order = order
        """The faces of the hand, ascending."""
        self.upper = upper
        self.discardable: list[bool] | None = None
        """Per face, whether an unlocked natural copy exists (``None``: nothing is locked)."""
        self.joker_discardable = False
        """Whether an unlocked joker exists."""

    def cover(self, need: int, skips: int, jokers: int) -> bool:
        """Whether the counts split into ``need`` melds and exactly ``skips`` discards (a face
        in ``discardable``, or an unlocked joker)."""
        count = self.count
        order = self.order
        index = 0
        for index, face in enumerate(order):  # noqa: B007 - index is read after the loop
            if count[face]:
                break
        else:
            face = JOKER
        if need == 0:
            if face == JOKER:
                return jokers == 0 or (skips > 0 and jokers == 1 and self.joker_discardable)
            if not skips or jokers or count[face] != 1:
                return False
            if self.discardable is not None and not self.discardable[face]:
                return False
            return not any(count[other] for other in order[index + 1 :])
        if face == JOKER:
            return False
        count[face] -= 1
        for first, second in self.upper[face]:
            used = 0
            if first == JOKER:
                used = 2
                if jokers < 2:
                    continue
            else:
                if not count[first]:
                    continue
                if second == JOKER:
                    if not jokers:
                        continue
                    used = 1
                elif not count[second] or (second == first and count[first] < 2):
                    continue
                count[first] -= 1
                if second != JOKER:
                    count[second] -= 1
            found = self.cover(need - 1, skips, jokers - used)
            if first != JOKER:
                count[first] += 1
                if second != JOKER:
                    count[second] += 1
            if found:
                count[face] += 1
                return True
        found = False
        if skips and (self.discardable is None or self.discardable[face]):
            found = self.cover(need, skips - 1, jokers)
        count[face] += 1
        return found

    def two_melds(self, jokers: int, start: int = 0) -> bool:
        """Whether two disjoint melds can be taken from the faces ``order[start:]``."""
        count = self.count
        order = self.order
        for index in range(start, len(order)):
            face = order[index]
            if not count[face]:
                continue
            count[face] -= 1
            for first, second in self.upper[face]:
                used = 0
                if first == JOKER:
                    used = 2
                    if jokers < 2:
                        continue
                else:
                    if not count[first]:
                        continue
                    if second == JOKER:
                        if not jokers:
                            continue
                        used = 1
                    elif not count[second] or (second == first and count[first] < 2):
                        continue
                    count[first] -= 1
                    if second != JOKER:
                        count[second] -= 1
                found = self.one_meld(jokers - used, index)
                if first != JOKER:
                    count[first] += 1
                    if second != JOKER:
                        count[second] += 1
                if found:
                    count[face] += 1
                    return True
            # no first meld holds this face: set all its copies aside, as lower faces are
            count[face] += 1
            held = count[face]
            count[face] = 0
            found = self.two_melds(jokers, index + 1)
            count[face] = held
            return found
        return False

    def one_meld(self, jokers: int, start: int) -> bool:
        """Whether one meld can be taken from the faces ``order[start:]``."""
        count = self.count
        upper = self.upper
        faces = self.order[start:]
        if jokers >= 2:
            # a (joker, joker) template (sorted last) needs only its face, if the rules have one
            for face in faces:
                if count[face] and upper[face] and upper[face][-1][0] == JOKER:
                    return True
        for face in faces:
            have = count[face]
            if not have:
                continue
            for first, second in upper[face]:
                if first == JOKER:
                    continue
                if first == face:  # then second is this face too, or higher, or a joker
                    if have < 2:
                        continue
                    if second == JOKER:
                        if jokers:
                            return True
                    elif have >= (3 if second == face else 2) and count[second]:
                        return True
                elif count[first]:
                    if second == JOKER:
                        if jokers:
                            return True
                    elif count[second] and (second != first or count[first] >= 2):
                        return True
        return False
