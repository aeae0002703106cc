"""Pearson's chi-square goodness-of-fit test without scipy.

The critical values are hard-coded from the standard table of the chi-square distribution
(upper 1 % point, i.e. the 0.99 quantile, as printed in e.g. NIST/SEMATECH e-Handbook of
Statistical Methods, section 1.3.6.7.4). :func:`chi_square_cdf` is a small independent
implementation of the regularized lower incomplete gamma function; a test uses it to check every
table entry, so a typo in the table cannot slip through.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = (
    "CRITICAL_VALUES_99",
    "chi_square_cdf",
    "pearson_statistic",
)

CRITICAL_VALUES_99: dict[int, float] = {
    # degrees of freedom: value exceeded with probability 1 % under the null hypothesis.
    2: 9.210,
    4: 13.277,
    5: 15.086,
    6: 16.812,
    9: 21.666,
    16: 32.000,
    23: 41.638,
    25: 44.314,
    49: 74.919,
    103: 139.297,
    119: 157.800,
}


def pearson_statistic(observed: Sequence[int], expected_per_cell: float) -> float:
    """``sum((O - E)**2 / E)`` over the cells, all with the same expected count ``E``."""
    return sum((count - expected_per_cell) ** 2 for count in observed) / expected_per_cell


def chi_square_cdf(value: float, degrees_of_freedom: int) -> float:
    """``P(X <= value)`` for ``X`` chi-square with ``degrees_of_freedom``: ``P(df/2, value/2)``."""
    shape = degrees_of_freedom / 2
    x = value / 2
    if x <= 0:
        return 0.0
    log_prefactor = -x + shape * math.log(x) - math.lgamma(shape)
    if x < shape + 1:
        # Power series: P(a, x) = x**a e**-x / Gamma(a) * sum(x**k / (a (a+1) ... (a+k))).
        term = 1 / shape
        total = term
        k = 1
        while term > total * 1e-17:
            term *= x / (shape + k)
            total += term
            k += 1
        return total * math.exp(log_prefactor)
    # Lentz's continued fraction for the upper tail Q(a, x) = 1 - P(a, x).
    tiny = 1e-300
    b = x + 1 - shape
    c = 1 / tiny
    d = 1 / b
    fraction = d
    i = 1
    while True:
        a_i = -i * (i - shape)
        b += 2
        d = a_i * d + b
        d = tiny if abs(d) < tiny else d
        c = b + a_i / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        fraction *= delta
        i += 1
        if abs(delta - 1) < 1e-16:
            return 1 - math.exp(log_prefactor) * fraction
