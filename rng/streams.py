"""Round seeds, commitments, client-seed mixing and labelled random streams.

A round works like this:

1. :func:`new_round_seed` draws a fresh 32-byte seed from :mod:`secrets`; the service publishes
   :func:`commitment` of it (and stores the seed sealed, see :mod:`rng.sealing`).
2. Players may add client seeds; :func:`mix_client_seeds` folds them, in the order given, into
   the mixed seed. The order is part of the input, so the service must fix and record it.
3. Each random decision uses its own stream, :func:`derive_stream` of the seed, the client seeds
   and a label such as ``"deal"``, ``"first_dealer"`` or ``"reshuffle/1"``. Streams are
   independent, and any one of them can be re-derived alone from the revealed seed.

Every function takes the algorithm ``version`` and dispatches through
:data:`rng.algorithms.ALGORITHMS`; the exact formulas of ``raiz-rng/1`` are in
:mod:`rng.version_1` and ``docs/rng.md``.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Final, Protocol

from rng.algorithms import Algorithm, get_algorithm
from rng.shuffle import ByteSource
from rng.version_1 import VERSION

__all__ = (
    "ALGORITHM_VERSION",
    "Chance",
    "RandomStream",
    "commitment",
    "derive_stream",
    "mix_client_seeds",
    "new_round_seed",
)

ALGORITHM_VERSION: Final = VERSION
"""The version new rounds are made with; store it with each round."""


class Chance(Protocol):
    """What game code draws from: a :class:`RandomStream`, or a ``FixedChance`` in tests."""

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``[0, n)``."""
        ...

    def permutation(self, n: int) -> list[int]:
        """A uniform permutation of ``range(n)``."""
        ...

    def random_bytes(self, n: int) -> bytes:
        """``n`` pseudorandom bytes."""
        ...


class RandomStream:
    """One labelled, deterministic stream of a round; build it with :func:`derive_stream`.

    Successive calls continue the same byte stream, so the result of a call depends on every
    call made on the stream before it. To keep a stream verifiable, make the same calls in the
    same order; the public verifier assumes one call per stream (see ``docs/rng.md``).
    """

    __slots__ = ("_algorithm", "_label", "_source")

    def __init__(self, algorithm: Algorithm, label: str, source: ByteSource) -> None:
        self._algorithm = algorithm
        self._label = label
        self._source = source

    def __repr__(self) -> str:
        return f"RandomStream(version={self.version!r}, label={self._label!r})"

    @property
    def version(self) -> str:
        """The algorithm version the stream was derived under."""
        return self._algorithm.version

    @property
    def label(self) -> str:
        """The label the stream was derived for."""
        return self._label

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``[0, n)`` (see :func:`rng.shuffle.randbelow`)."""
        return self._algorithm.randbelow(self._source, n)

    def permutation(self, n: int) -> list[int]:
        """A uniform permutation of ``range(n)`` (see :func:`rng.shuffle.permutation`)."""
        return self._algorithm.permutation(self._source, n)

    def random_bytes(self, n: int) -> bytes:
        """The next ``n`` bytes of the stream (at most 65,536 per call)."""
        return self._source.generate(n)


def new_round_seed(version: str = ALGORITHM_VERSION) -> bytes:
    """A fresh, secret round seed from the operating system's CSPRNG."""
    return secrets.token_bytes(get_algorithm(version).seed_length_bytes)


def commitment(seed: bytes, version: str = ALGORITHM_VERSION) -> str:
    """The hex commitment to ``seed``, published before the deal."""
    return get_algorithm(version).commitment(seed)


def mix_client_seeds(
    seed: bytes, client_seeds: Sequence[bytes], version: str = ALGORITHM_VERSION
) -> bytes:
    """The mixed seed: ``seed`` combined with the client seeds, in the order given."""
    return get_algorithm(version).mix_client_seeds(seed, client_seeds)


def derive_stream(
    seed: bytes,
    label: str,
    client_seeds: Sequence[bytes] = (),
    version: str = ALGORITHM_VERSION,
) -> RandomStream:
    """The stream called ``label`` of the round with this seed and these client seeds."""
    algorithm = get_algorithm(version)
    mixed_seed = algorithm.mix_client_seeds(seed, client_seeds)
    return RandomStream(algorithm, label, algorithm.stream_source(mixed_seed, label))
