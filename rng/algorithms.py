"""The registry of RNG algorithm versions, so every round verifies under its own version.

A round stores its version tag. Verification looks the tag up in :data:`ALGORITHMS` and uses that
entry's functions, so rounds made under an old version keep verifying after a new version becomes
the default. Adding a version means adding a module like :mod:`rng.version_1` and one entry here;
existing entries never change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from rng import shuffle, version_1
from rng.errors import RngError
from rng.shuffle import ByteSource

__all__ = (
    "ALGORITHMS",
    "Algorithm",
    "UnknownVersionError",
    "get_algorithm",
)


@dataclass(frozen=True, slots=True)
class Algorithm:
    """Every formula a round depends on, for one version tag."""

    version: str
    """The tag stored with each round, e.g. ``"raiz-rng/1"``."""
    seed_length_bytes: int
    """The exact length of a round seed."""
    check_seed: Callable[[bytes], bytes]
    """Validates a seed and returns it, raising :class:`rng.errors.RngError` otherwise."""
    check_label: Callable[[str], bytes]
    """Validates a stream label and returns its encoding."""
    check_client_seed: Callable[[bytes], bytes]
    """Validates one client seed (e.g. when a player submits it) and returns it."""
    max_client_seeds: int
    """The most client seeds one round can mix in."""
    commitment: Callable[[bytes], str]
    """Seed to the hex commitment published before the deal."""
    mix_client_seeds: Callable[[bytes, Sequence[bytes]], bytes]
    """Seed and ordered client seeds to the mixed seed all streams derive from."""
    stream_source: Callable[[bytes, str], ByteSource]
    """Mixed seed and label to the stream's byte source."""
    randbelow: Callable[[ByteSource, int], int]
    """A uniform integer in ``[0, n)`` from a byte source."""
    permutation: Callable[[ByteSource, int], list[int]]
    """A uniform permutation of ``range(n)`` from a byte source."""
    formulas: Mapping[str, str]
    """A one-line statement of each formula, for people (``docs/rng.md`` is the reference)."""


class UnknownVersionError(RngError):
    """The version tag is not in :data:`ALGORITHMS`."""


ALGORITHMS: Final[Mapping[str, Algorithm]] = MappingProxyType(
    {
        version_1.VERSION: Algorithm(
            version=version_1.VERSION,
            seed_length_bytes=version_1.SEED_LENGTH_BYTES,
            check_seed=version_1.check_seed,
            check_label=version_1.check_label,
            check_client_seed=version_1.check_client_seed,
            max_client_seeds=version_1.MAX_CLIENT_SEEDS,
            commitment=version_1.commitment,
            mix_client_seeds=version_1.mix_client_seeds,
            stream_source=version_1.stream_bytes,
            randbelow=shuffle.randbelow,
            permutation=shuffle.permutation,
            formulas=version_1.FORMULAS,
        ),
    }
)
"""Every algorithm version ever used, by tag. Entries are added, never changed or removed."""


def get_algorithm(version: str) -> Algorithm:
    """Return the algorithm for a stored version tag, or raise :class:`UnknownVersionError`."""
    algorithm = ALGORITHMS.get(version) if isinstance(version, str) else None
    if algorithm is None:
        known = ", ".join(sorted(ALGORITHMS))
        msg = f"unknown RNG algorithm version {version!r}; known versions: {known}"
        raise UnknownVersionError(msg)
    return algorithm
