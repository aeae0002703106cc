"""Chi-square tests of the shuffle at 99 % confidence, on fixed seeds so they cannot flake.

Three statistics, each compared with the 0.99 quantile of its chi-square distribution (a correct
shuffle exceeds it with probability 1 % per seed; with the seeds fixed below the outcome is
deterministic, so a failure means the algorithm changed, not bad luck):

* **Positions.** ``N`` shuffles of an ``n``-card deck fill an ``n x n`` table ``O[position][card]``
  with expected count ``E = N / n`` per cell. Every shuffle adds exactly one count to each row
  and each column, so the cells are not independent: ``X = sum((O - E)**2 / E)`` has mean
  ``n (n - 1)``, and ``X (n - 1) / n`` is asymptotically chi-square with ``(n - 1)**2`` degrees of
  freedom. (Centred permutation matrices span the ``(n - 1)**2``-dimensional space
  ``V_std (x) V_std``, irreducible under relabelling cards and positions, so the covariance is a
  multiple of the identity there, by Schur's lemma; the multiple is fixed by the mean.)
* **Whole permutations.** For ``n <= 4`` every one of the ``n!`` orders is a cell; ``df = n! - 1``.
* **randbelow.** A histogram of draws below ``n``; ``df = n - 1``.

A power check runs the same permutation test on the classic broken shuffle (swap each position
with *any* position) and requires it to fail, so the test can actually see a bias.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import Counter
from collections.abc import Callable

import pytest

from rng.drbg import HmacDrbg
from rng.shuffle import BlockStream, ByteSource, permutation, randbelow
from rng.version_1 import STREAM_BLOCK_BYTES
from tests.unit.rng.chi_square import CRITICAL_VALUES_99, chi_square_cdf, pearson_statistic


def seeded_drbg(purpose: str) -> BlockStream:
    """A stream read exactly as ``raiz-rng/1`` reads one (so the fast shuffle path is tested)."""
    drbg = HmacDrbg(hashlib.sha256(purpose.encode()).digest(), b"raiz-chi-square!")
    return BlockStream(drbg, STREAM_BLOCK_BYTES)


def test_critical_value_table_is_right() -> None:
    for degrees_of_freedom, critical_value in CRITICAL_VALUES_99.items():
        assert chi_square_cdf(critical_value, degrees_of_freedom) == pytest.approx(0.99, abs=1e-4)


@pytest.mark.parametrize(
    ("deck_size", "shuffle_count"), [(3, 3000), (4, 4000), (5, 5000), (6, 6000), (8, 8000)]
)
def test_positions_are_uniform(deck_size: int, shuffle_count: int) -> None:
    drbg = seeded_drbg(f"positions/{deck_size}")
    table = [[0] * deck_size for _ in range(deck_size)]
    for _ in range(shuffle_count):
        for position, card in enumerate(permutation(drbg, deck_size)):
            table[position][card] += 1
    expected = shuffle_count / deck_size
    raw = pearson_statistic([count for row in table for count in row], expected)
    scaled = raw * (deck_size - 1) / deck_size
    assert scaled < CRITICAL_VALUES_99[(deck_size - 1) ** 2]


def permutation_statistic(
    shuffle: Callable[[ByteSource, int], list[int]], deck_size: int
) -> tuple[float, float]:
    orders = list(itertools.permutations(range(deck_size)))
    shuffle_count = 250 * len(orders)
    drbg = seeded_drbg(f"orders/{deck_size}")
    counts = Counter(tuple(shuffle(drbg, deck_size)) for _ in range(shuffle_count))
    assert set(counts) <= set(orders)
    statistic = pearson_statistic([counts[order] for order in orders], shuffle_count / len(orders))
    return statistic, CRITICAL_VALUES_99[math.factorial(deck_size) - 1]


@pytest.mark.parametrize("deck_size", [3, 4])
def test_every_order_is_equally_likely(deck_size: int) -> None:
    statistic, critical_value = permutation_statistic(permutation, deck_size)
    assert statistic < critical_value


def naive_shuffle(source: ByteSource, deck_size: int) -> list[int]:
    items = list(range(deck_size))
    for index in range(deck_size):
        other = randbelow(source, deck_size)
        items[index], items[other] = items[other], items[index]
    return items


@pytest.mark.parametrize("deck_size", [3, 4])
def test_the_order_test_detects_a_biased_shuffle(deck_size: int) -> None:
    statistic, critical_value = permutation_statistic(naive_shuffle, deck_size)
    assert statistic > critical_value


@pytest.mark.parametrize("bound", [3, 5, 7, 104])
def test_randbelow_histogram_is_uniform(bound: int) -> None:
    drbg = seeded_drbg(f"randbelow/{bound}")
    draw_count = 200 * bound
    counts = Counter(randbelow(drbg, bound) for _ in range(draw_count))
    statistic = pearson_statistic([counts[value] for value in range(bound)], draw_count / bound)
    assert statistic < CRITICAL_VALUES_99[bound - 1]
