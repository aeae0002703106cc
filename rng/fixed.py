"""``FixedChance``: scripted chance for tests, never for real rounds.

Game code draws from a :class:`rng.streams.Chance`. In production that is always a
:class:`rng.streams.RandomStream`; tests may hand it a :class:`FixedChance` instead to force a
known deck. The service must refuse to build one outside test mode (that guard is the service's
job; this module has no notion of settings).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

from rng.errors import RngError

__all__ = ("FixedChance",)


class FixedChance:
    """Hands out pre-chosen results, each kind in its own queue, and checks each one fits.

    ``permutations`` answer :meth:`permutation`, ``draws`` answer :meth:`randbelow` and
    ``byte_strings`` answer :meth:`random_bytes`, first in first out. A result that does not fit
    the request (wrong size, out of range, not a permutation) or an empty queue raises
    :class:`rng.errors.RngError`, so a broken test script fails loudly instead of dealing junk.
    """

    __slots__ = ("_byte_strings", "_draws", "_permutations")

    def __init__(
        self,
        *,
        permutations: Iterable[Sequence[int]] = (),
        draws: Iterable[int] = (),
        byte_strings: Iterable[bytes] = (),
    ) -> None:
        self._permutations: deque[list[int]] = deque(list(order) for order in permutations)
        self._draws: deque[int] = deque(draws)
        self._byte_strings: deque[bytes] = deque(byte_strings)

    def __repr__(self) -> str:
        return (
            f"FixedChance(permutations_left={len(self._permutations)}, "
            f"draws_left={len(self._draws)}, byte_strings_left={len(self._byte_strings)})"
        )

    @property
    def is_exhausted(self) -> bool:
        """Whether every scripted result has been used; tests can assert it at the end."""
        return not (self._permutations or self._draws or self._byte_strings)

    def randbelow(self, n: int) -> int:
        """The next scripted draw, which must lie in ``[0, n)``."""
        if not self._draws:
            msg = f"FixedChance has no scripted draw left for randbelow({n})"
            raise RngError(msg)
        draw = self._draws.popleft()
        if not 0 <= draw < n:
            msg = f"scripted draw {draw} is not in [0, {n})"
            raise RngError(msg)
        return draw

    def permutation(self, n: int) -> list[int]:
        """The next scripted order, which must be a permutation of ``range(n)``."""
        if not self._permutations:
            msg = f"FixedChance has no scripted permutation left for permutation({n})"
            raise RngError(msg)
        order = self._permutations.popleft()
        if sorted(order) != list(range(n)):
            msg = f"scripted order of {len(order)} items is not a permutation of range({n})"
            raise RngError(msg)
        return order

    def random_bytes(self, n: int) -> bytes:
        """The next scripted byte string, which must be ``n`` bytes long."""
        if not self._byte_strings:
            msg = f"FixedChance has no scripted byte string left for random_bytes({n})"
            raise RngError(msg)
        chunk = self._byte_strings.popleft()
        if len(chunk) != n:
            msg = f"scripted byte string has {len(chunk)} bytes, {n} were requested"
            raise RngError(msg)
        return chunk
