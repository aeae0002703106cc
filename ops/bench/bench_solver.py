"""Benchmark the closing solver (exact; see tests/unit/games/test_solver.py for exactness).

Run from the repository root::

    python ops/bench/bench_solver.py [--hands 100000] [--seed 1]

Not a test: it prints figures and asserts nothing. Each figure is the best of three passes
over the same pre-generated hands (to reduce noise from other processes). The headline is
``find_close`` on random 10-card ``cacheta-raiz`` hands (after the draw, 2 decks) holding
both wild cards of the round.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.games import MeldRules, closing_discards, find_close, has_two_disjoint_melds, wild_ids

RUNS = 3
DECKS = 2

Case = tuple[list[int], frozenset[int]]


def hands_with_both_wilds(count: int, rng: random.Random, size: int = 10) -> list[Case]:
    """Random hands holding the round's 2 wild cards plus ``size - 2`` other cards."""
    cases = []
    for _ in range(count):
        vira = rng.randrange(52 * DECKS)
        wilds = wild_ids(vira, "same_suit", DECKS)
        others = [card for card in range(52 * DECKS) if card not in wilds and card != vira]
        cases.append(([*sorted(wilds), *rng.sample(others, size - 2)], wilds))
    return cases


def uniform_hands(count: int, rng: random.Random, size: int) -> list[Case]:
    """Random hands from the shoe (the vira excluded); wilds only if dealt."""
    cases = []
    for _ in range(count):
        vira = rng.randrange(52 * DECKS)
        pool = [card for card in range(52 * DECKS) if card != vira]
        cases.append((rng.sample(pool, size), wild_ids(vira, "same_suit", DECKS)))
    return cases


def best_rate(work: Callable[[Sequence[Case]], int], cases: Sequence[Case]) -> tuple[float, int]:
    """Hands per second (best of ``RUNS`` passes) and the count ``work`` returned."""
    best = 0.0
    found = 0
    for _ in range(RUNS):
        started = time.perf_counter()
        found = work(cases)
        best = max(best, len(cases) / (time.perf_counter() - started))
    return best, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    raiz = MeldRules()
    free = MeldRules(meld_shape="any", full_close_allowed=True)

    def closes(rules: MeldRules) -> Callable[[Sequence[Case]], int]:
        return lambda cases: sum(
            find_close(hand, wilds, rules) is not None for hand, wilds in cases
        )

    two_wilds = hands_with_both_wilds(args.hands, rng)
    figures = [
        ("find_close, 10 cards with 2 wilds, cacheta-raiz", closes(raiz), two_wilds),
        (
            "find_close, uniform 10 cards, cacheta-raiz",
            closes(raiz),
            uniform_hands(args.hands, rng, 10),
        ),
        (
            "find_close, 11 cards with 2 wilds, any shape + full close",
            closes(free),
            hands_with_both_wilds(args.hands // 10, rng, 11),
        ),
        (
            "closing_discards (check-hand), 10 cards with 2 wilds",
            lambda cases: sum(bool(closing_discards(hand, wilds, raiz)) for hand, wilds in cases),
            two_wilds[: args.hands // 10],
        ),
        (
            "has_two_disjoint_melds (claim test), 9 cards with 2 wilds",
            lambda cases: sum(
                has_two_disjoint_melds(hand[:9], wilds, raiz) for hand, wilds in cases
            ),
            two_wilds,
        ),
    ]
    print(f"python {sys.version.split()[0]}, {args.hands} hands, seed {args.seed}, best of {RUNS}")
    for label, work, cases in figures:
        rate, found = best_rate(work, cases)
        share = 100 * found // max(1, len(cases))
        print(f"{label}: {rate:,.0f} hands/s ({share}% positive)")


if __name__ == "__main__":
    main()
