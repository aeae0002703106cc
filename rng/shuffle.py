"""Uniform integers and Fisher-Yates permutations from a deterministic byte source.

The algorithm is part of the public verification contract, so it is specified here bit for bit.
An independent implementation that follows these rules reproduces every draw exactly.

``randbelow(source, n)`` returns a uniform integer in ``[0, n)``:

1. ``n`` must be an ``int`` with ``1 <= n <= MAX_RANDBELOW_BOUND`` (2**256).
2. ``k = (n - 1).bit_length()``, the number of bits needed for ``n - 1``. If ``k == 0``
   (that is ``n == 1``) the result is ``0`` and **no bytes are read**.
3. ``w = ceil(k / 8)`` bytes; ``mask = 2**k - 1``.
4. Loop: read ``w`` bytes with **one** ``source.generate(w)`` call (one HMAC_DRBG Generate
   request with no additional input), read them as an unsigned **big-endian** integer, keep the
   low ``k`` bits (``value & mask``, which clears the surplus high bits of the first byte). If
   that ``candidate < n``, return it; otherwise discard it and repeat step 4 (rejection sampling:
   no modulo reduction, no floating point, so every result has probability exactly ``1/n``).

Because ``2**(k-1) < n <= 2**k``, each attempt succeeds with probability greater than 1/2.
A power of two ``n = 2**k`` never rejects; ``n = 2**k + 1`` rejects almost half the time.

``permutation(source, n)`` is the Durstenfeld form of Fisher-Yates:

1. ``items = [0, 1, ..., n - 1]``.
2. For ``i`` from ``n - 1`` **down to** ``1``: ``j = randbelow(source, i + 1)``, then swap
   ``items[i]`` and ``items[j]`` (``j == i`` leaves the list unchanged but still consumed its
   draw).
3. Return ``items``. ``items[p]`` is the original index that ends at position ``p``.

A deck of ``n`` cards therefore makes exactly ``n - 1`` ``randbelow`` calls, with bounds
``n, n - 1, ..., 2`` in that order.
"""

from __future__ import annotations

from typing import Final, Protocol

from rng.errors import RngError

__all__ = (
    "MAX_PERMUTATION_SIZE",
    "MAX_RANDBELOW_BOUND",
    "ByteSource",
    "permutation",
    "randbelow",
)

MAX_RANDBELOW_BOUND: Final = 2**256
"""The largest ``n`` accepted by :func:`randbelow`: a candidate never exceeds one SHA-256 block."""
MAX_PERMUTATION_SIZE: Final = 2**16
"""The largest permutation built in one call; a card deck is a few hundred at most."""


class ByteSource(Protocol):
    """Anything that returns the requested number of pseudorandom bytes, e.g. ``HmacDrbg``."""

    def generate(self, n_bytes: int) -> bytes:
        """Return exactly ``n_bytes`` bytes."""
        ...


def _check_int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an int, not {type(value).__name__}"
        raise RngError(msg)
    if not low <= value <= high:
        msg = f"{name} must be in {low}..{high}, got {value}"
        raise RngError(msg)
    return value


def _draw_below(source: ByteSource, n: int) -> int:
    # The unchecked core of randbelow: permutation() calls it n - 1 times with bounds it knows
    # to be valid, so it skips the argument checks.
    bit_count = (n - 1).bit_length()
    if bit_count == 0:
        return 0
    width_bytes = (bit_count + 7) // 8
    mask = (1 << bit_count) - 1
    while True:
        chunk = source.generate(width_bytes)
        if len(chunk) != width_bytes:
            msg = f"byte source returned {len(chunk)} bytes, {width_bytes} were requested"
            raise RngError(msg)
        candidate = int.from_bytes(chunk, "big") & mask
        if candidate < n:
            return candidate


def randbelow(drbg: ByteSource, n: int) -> int:
    """Return a uniform integer in ``[0, n)``, by the rejection rule in the module docstring."""
    _check_int("n", n, 1, MAX_RANDBELOW_BOUND)
    return _draw_below(drbg, n)


def permutation(drbg: ByteSource, n: int) -> list[int]:
    """Return a uniform permutation of ``range(n)`` (Fisher-Yates, from the top down)."""
    _check_int("n", n, 1, MAX_PERMUTATION_SIZE)
    items = list(range(n))
    for index in range(n - 1, 0, -1):
        other = _draw_below(drbg, index + 1)
        items[index], items[other] = items[other], items[index]
    return items
