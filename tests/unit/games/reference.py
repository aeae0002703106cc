"""A brute-force closing reference, written independently of ``app.games.solver``.

Meld validity: a block of cards is a meld when, for some choice of which wild cards stand
as themselves, the natural faces fit inside one *concrete* natural meld of the block's size
(enumerated outright: every set and every run window of every suit), the remaining places
going to substituting wilds. Closing: subset dynamic programming over every partition.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from itertools import combinations, product

SUITS = range(4)


def _concrete_melds(size: int, ace_high: bool, same_suit: bool) -> list[Counter[int]]:
    melds: list[Counter[int]] = []
    for rank in range(13):
        if same_suit:
            continue  # handled separately (any suits of one rank)
        for suits in combinations(SUITS, size) if size <= 4 else ():
            melds.append(Counter(suit * 13 + rank for suit in suits))
    if size <= 13:
        for suit in SUITS:
            # positions 1..14, ace is 1 or 14; a window never holds both
            top = 14 if ace_high else 13
            for low in range(1, top - size + 2):
                window = range(low, low + size)
                if 1 in window and 14 in window:
                    continue
                melds.append(Counter(suit * 13 + (position - 1) % 13 for position in window))
    return melds


@cache
def _melds_of_size(size: int, ace_high: bool, same_suit: bool) -> tuple[Counter[int], ...]:
    return tuple(_concrete_melds(size, ace_high, same_suit))


def ref_block_valid(
    block: tuple[int, ...], wilds: frozenset[int], wpm: int, ace_high: bool, same_suit: bool
) -> bool:
    if len(block) < 3:
        return False
    plain = [card % 52 for card in block if card not in wilds]
    wild = [card % 52 for card in block if card in wilds]
    for standing in product((True, False), repeat=len(wild)):
        naturals = Counter(
            plain + [face for face, stands in zip(wild, standing, strict=True) if stands]
        )
        jokers = len(block) - sum(naturals.values())
        if jokers > wpm or not naturals:
            continue
        if same_suit and len({face % 13 for face in naturals}) == 1:
            return True
        for meld in _melds_of_size(len(block), ace_high, same_suit):
            if all(meld[face] >= times for face, times in naturals.items()):
                return True
    return False


def reference(
    cards: list[int],
    wilds: frozenset[int],
    *,
    shape: str,
    wpm: int,
    ace_high: bool,
    same_suit: bool = False,
    full_allowed: bool = False,
    locked: frozenset[int] = frozenset(),
) -> dict[str, object]:
    """``{"discards": set of closing discards, "full": bool, "two_melds": bool}``.

    ``two_melds`` looks at 3-card melds only; that a valid meld of 4+ cards always contains a
    valid 3-card meld is checked by its own brute-force test.
    """
    n = len(cards)
    valid: dict[int, bool] = {}

    def block_ok(mask: int, sized: bool) -> bool:
        if mask not in valid:
            block = tuple(cards[i] for i in range(n) if mask >> i & 1)
            valid[mask] = ref_block_valid(block, wilds, wpm, ace_high, same_suit)
        if not valid[mask]:
            return False
        return not sized or shape != "three_threes" or bin(mask).count("1") == 3

    @cache
    def cover(mask: int) -> bool:
        if mask == 0:
            return True
        low = mask & -mask
        rest = mask ^ low
        sub = rest
        while True:
            block = sub | low
            if bin(block).count("1") >= 3 and block_ok(block, True) and cover(mask ^ block):
                return True
            if sub == 0:
                break
            sub = (sub - 1) & rest
        return False

    everything = (1 << n) - 1
    discards = set()
    for i in range(n):
        if cards[i] in locked:
            continue
        rest = everything ^ (1 << i)
        if shape == "three_threes" and n - 1 != 9:
            continue
        if cover(rest):
            discards.add(cards[i])
    full = full_allowed and shape != "three_threes" and cover(everything)
    two = False
    masks3 = [sum(1 << i for i in trio) for trio in combinations(range(n), 3)]
    good = [mask for mask in masks3 if block_ok(mask, False)]
    for first, second in combinations(good, 2):
        if not first & second:
            two = True
            break
    return {"discards": discards, "full": full, "two_melds": two}
