"""Seeded-RNG service: seeds, commitments, reveals and shuffles.

The pure, deterministic part: an SP 800-90A HMAC_DRBG (:mod:`rng.drbg`), uniform draws and
Fisher-Yates shuffles (:mod:`rng.shuffle`), round seeds, commitments, client-seed mixing and
labelled streams (:mod:`rng.streams`, formulas in :mod:`rng.version_1`), the version registry
(:mod:`rng.algorithms`), sealing seeds at rest (:mod:`rng.sealing`), public verification
(:mod:`rng.verification`, command line ``python -m rng.verify``) and scripted chance for tests
(:mod:`rng.fixed`). ``docs/rng.md`` specifies every algorithm bit for bit.

The database-backed service (:mod:`rng.service`; what it returns and how it refuses in
:mod:`rng.contract`, tables in :mod:`rng.models`, metrics in :mod:`rng.metrics`) is not
imported here, so verifying a round needs only ``cryptography``.
"""

from __future__ import annotations

from rng.algorithms import ALGORITHMS, Algorithm, UnknownVersionError, get_algorithm
from rng.drbg import DrbgError, HmacDrbg
from rng.errors import RngError
from rng.fixed import FixedChance
from rng.sealing import SealedSeed, SealingError, SeedSealer, parse_keyring
from rng.shuffle import BlockStream, ByteSource, permutation, randbelow
from rng.streams import (
    ALGORITHM_VERSION,
    Chance,
    RandomStream,
    commitment,
    derive_stream,
    mix_client_seeds,
    new_round_seed,
)
from rng.verification import (
    FirstDealerDraw,
    ReshuffleResult,
    VerificationError,
    VerificationFailure,
    VerificationResult,
    verify_round,
)

__all__ = (
    "ALGORITHMS",
    "ALGORITHM_VERSION",
    "Algorithm",
    "BlockStream",
    "ByteSource",
    "Chance",
    "DrbgError",
    "FirstDealerDraw",
    "FixedChance",
    "HmacDrbg",
    "RandomStream",
    "ReshuffleResult",
    "RngError",
    "SealedSeed",
    "SealingError",
    "SeedSealer",
    "UnknownVersionError",
    "VerificationError",
    "VerificationFailure",
    "VerificationResult",
    "commitment",
    "derive_stream",
    "get_algorithm",
    "mix_client_seeds",
    "new_round_seed",
    "parse_keyring",
    "permutation",
    "randbelow",
    "verify_round",
)
