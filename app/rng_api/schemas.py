"""HTTP payloads of the RNG routes."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Annotated, Final

import msgspec

from rng.algorithms import Algorithm
from rng.contract import PublicRound
from rng.streams import ALGORITHM_VERSION
from rng.verification import MAX_PLAYER_COUNT, VerificationResult

__all__ = (
    "MAX_VERIFY_DECK_SIZE",
    "MAX_VERIFY_RESHUFFLES",
    "AlgorithmRead",
    "DrawnStreamRead",
    "FirstDealerRead",
    "ReshuffleRead",
    "RoundRead",
    "VerifyRequest",
    "VerifyResult",
)

DOCUMENT: Final = "docs/rng.md"
"""Where the algorithms are specified bit for bit (in the source repository)."""
MAX_VERIFY_DECK_SIZE: Final = 1024
"""The largest deck the public verification route shuffles (real decks have at most 104)."""
MAX_VERIFY_RESHUFFLES: Final = 32
"""The most reshuffles one verification request recomputes; bounds the work per request."""
MAX_CLIENT_SEEDS: Final = 16
"""The most client seeds any version mixes."""

Hex64 = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^[0-9a-fA-F]{64}(?!\n)$",
        description="32 bytes as 64 hex digits.",
        examples=["7a40a5338261420a282273e2e94416e93516cd37a01a2c538547b9af1b504e13"],
    ),
]
ClientSeedHex = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^(?:[0-9a-fA-F]{2}){1,64}(?!\n)$",
        description="1 to 64 bytes as hex digits.",
        examples=["f1d8a1664fc39866f9644e7deb116f51"],
    ),
]
DeckSize = Annotated[int, msgspec.Meta(ge=1, le=MAX_VERIFY_DECK_SIZE)]
Version = Annotated[
    str,
    msgspec.Meta(min_length=1, max_length=32, examples=[ALGORITHM_VERSION]),
]


class DrawnStreamRead(msgspec.Struct):
    """A stream the round has drawn."""

    label: str
    fixed: bool
    """True only in tests: a scripted result replaced the seeded stream."""
    drawn_at: dt.datetime


class RoundRead(msgspec.Struct):
    """A round's public RNG record; ``seed`` stays null until the round is revealed."""

    id: uuid.UUID
    table_id: uuid.UUID
    round_number: int
    version: str
    commitment: str
    """SHA-256 commitment to the seed, published before the deal."""
    client_seeds: list[str]
    """Client seeds in mixing order, hex."""
    contributors: list[str]
    """Who contributed each client seed, same order."""
    revealed: bool
    seed: str | None
    """The seed, hex, once revealed; null before."""
    committed_at: dt.datetime
    revealed_at: dt.datetime | None
    streams: list[DrawnStreamRead]

    @classmethod
    def of(cls, public: PublicRound) -> RoundRead:
        """The API form of a public round."""
        return cls(
            id=public.id,
            table_id=public.table_ref,
            round_number=public.round_number,
            version=public.version,
            commitment=public.commitment,
            client_seeds=list(public.client_seeds),
            contributors=list(public.contributors),
            revealed=public.seed is not None,
            seed=public.seed,
            committed_at=public.committed_at,
            revealed_at=public.revealed_at,
            streams=[
                DrawnStreamRead(label=item.label, fixed=item.fixed, drawn_at=item.drawn_at)
                for item in public.streams
            ],
        )


class AlgorithmRead(msgspec.Struct):
    """One algorithm version and its formulas."""

    version: str
    current: bool
    """Whether new rounds use it."""
    seed_length_bytes: int
    max_client_seeds: int
    formulas: dict[str, str]
    document: str
    """The bit-for-bit specification, with a worked example and a standalone verifier."""

    @classmethod
    def of(cls, algorithm: Algorithm) -> AlgorithmRead:
        """The API form of a registry entry."""
        return cls(
            version=algorithm.version,
            current=algorithm.version == ALGORITHM_VERSION,
            seed_length_bytes=algorithm.seed_length_bytes,
            max_client_seeds=algorithm.max_client_seeds,
            formulas=dict(algorithm.formulas),
            document=DOCUMENT,
        )


class VerifyRequest(msgspec.Struct, forbid_unknown_fields=True):
    """A revealed round to check: its public record and the sizes of its draws."""

    commitment: Hex64
    seed: Hex64
    deck_size: DeckSize
    client_seeds: Annotated[list[ClientSeedHex], msgspec.Meta(max_length=MAX_CLIENT_SEEDS)] = []
    """In the order the round published them."""
    version: Version = ALGORITHM_VERSION
    reshuffle_sizes: Annotated[list[DeckSize], msgspec.Meta(max_length=MAX_VERIFY_RESHUFFLES)] = []
    """Sizes of reshuffle/1, reshuffle/2, ..., in order."""
    player_count: Annotated[int, msgspec.Meta(ge=1, le=MAX_PLAYER_COUNT)] | None = None
    """Seats for the first-dealer draw, if wanted."""


class ReshuffleRead(msgspec.Struct):
    """One recomputed reshuffle."""

    label: str
    size: int
    permutation: list[int]


class FirstDealerRead(msgspec.Struct):
    """The recomputed first-dealer draw."""

    player_count: int
    seat: int


class VerifyResult(msgspec.Struct):
    """A verified round: the commitment matched, every requested draw recomputed."""

    version: str
    commitment: str
    seed: str
    client_seeds: list[str]
    mixed_seed: str
    deck_size: int
    deal: list[int]
    """``deal[p]`` is the index of the card at position ``p``."""
    reshuffles: list[ReshuffleRead]
    first_dealer: FirstDealerRead | None

    @classmethod
    def of(cls, result: VerificationResult) -> VerifyResult:
        """The API form of a verification result."""
        return cls(
            version=result.version,
            commitment=result.commitment,
            seed=result.seed,
            client_seeds=list(result.client_seeds),
            mixed_seed=result.mixed_seed,
            deck_size=result.deck_size,
            deal=list(result.deal),
            reshuffles=[
                ReshuffleRead(label=item.label, size=item.size, permutation=list(item.permutation))
                for item in result.reshuffles
            ],
            first_dealer=(
                None
                if result.first_dealer is None
                else FirstDealerRead(
                    player_count=result.first_dealer.player_count,
                    seat=result.first_dealer.seat,
                )
            ),
        )
