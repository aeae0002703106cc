"""Public verification of a revealed round: commitment check, then every stream recomputed.

:func:`verify_round` needs only what the service publishes after a round (commitment, seed,
client seeds in their recorded order, version) and the sizes of the draws. It assumes the
service used each stream for exactly one draw, as ``docs/rng.md`` specifies:

* ``"deal"``: one ``permutation(deck_size)``;
* ``"reshuffle/1"``, ``"reshuffle/2"``, ...: one ``permutation(size)`` each, in that order;
* ``"first_dealer"``: one ``randbelow(player_count)``.

``python -m rng.verify`` (see :mod:`rng.verify`) runs it from the command line.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from rng.algorithms import UnknownVersionError, get_algorithm
from rng.errors import RngError
from rng.shuffle import MAX_PERMUTATION_SIZE
from rng.streams import derive_stream

__all__ = (
    "DEAL_LABEL",
    "FIRST_DEALER_LABEL",
    "MAX_PLAYER_COUNT",
    "MAX_RESHUFFLES",
    "FirstDealerDraw",
    "ReshuffleResult",
    "VerificationError",
    "VerificationFailure",
    "VerificationResult",
    "reshuffle_label",
    "verify_round",
)

DEAL_LABEL: Final = "deal"
"""The stream whose one permutation is the initial deck order."""
FIRST_DEALER_LABEL: Final = "first_dealer"
"""The stream whose one ``randbelow(player_count)`` picks the first dealer's seat."""
MAX_RESHUFFLES: Final = 256
"""The most reshuffle streams one verification recomputes."""
MAX_PLAYER_COUNT: Final = 64
"""The largest table the first-dealer draw is recomputed for; far above any real table."""

_HEX_PATTERN: Final = re.compile(r"(?:[0-9a-fA-F]{2})*")


def reshuffle_label(number: int) -> str:
    """The label of the ``number``-th reshuffle of a round, counting from 1: ``"reshuffle/1"``."""
    return f"reshuffle/{number}"


class VerificationFailure(StrEnum):
    """Why a round did not verify; the value is what the command line prints as ``error``."""

    UNKNOWN_VERSION = "unknown_version"
    """The version tag is not a known algorithm."""
    INVALID_HEX = "invalid_hex"
    """A commitment, seed or client seed is not an even number of hex digits."""
    INVALID_INPUT = "invalid_input"
    """A value is well-formed but breaks the version's rules (seed length, sizes, ...)."""
    COMMITMENT_MISMATCH = "commitment_mismatch"
    """The seed does not hash to the published commitment."""


class VerificationError(RngError):
    """The round did not verify; ``failure`` names the reason, the message says where."""

    def __init__(self, failure: VerificationFailure, message: str) -> None:
        super().__init__(message)
        self.failure = failure


@dataclass(frozen=True, slots=True)
class ReshuffleResult:
    """One recomputed reshuffle stream."""

    label: str
    """``"reshuffle/<n>"``."""
    size: int
    """How many cards were reshuffled."""
    permutation: tuple[int, ...]
    """``permutation[p]`` is the index of the card that ends at position ``p``."""


@dataclass(frozen=True, slots=True)
class FirstDealerDraw:
    """The recomputed first-dealer draw."""

    player_count: int
    """The number of seats drawn from."""
    seat: int
    """The drawn seat index, in ``[0, player_count)``."""


@dataclass(frozen=True, slots=True)
class VerificationResult:
    """A round whose commitment matched, with every requested stream recomputed."""

    version: str
    """The algorithm version the round was verified under."""
    commitment: str
    """The matching commitment, lowercase hex."""
    seed: str
    """The revealed seed, lowercase hex."""
    client_seeds: tuple[str, ...]
    """The client seeds in mixing order, lowercase hex."""
    mixed_seed: str
    """The seed after client-seed mixing, lowercase hex; every stream derives from it."""
    deck_size: int
    """The size of the ``deal`` permutation."""
    deal: tuple[int, ...]
    """``deal[p]`` is the index of the card at position ``p`` of the shuffled deck."""
    reshuffles: tuple[ReshuffleResult, ...]
    """The reshuffle streams, ``reshuffle/1`` first."""
    first_dealer: FirstDealerDraw | None
    """The first-dealer draw, if a player count was given."""

    def to_json_dict(self) -> dict[str, object]:
        """A JSON-ready dictionary, as printed by ``python -m rng.verify``."""
        return {
            "ok": True,
            "version": self.version,
            "commitment": self.commitment,
            "seed": self.seed,
            "client_seeds": list(self.client_seeds),
            "mixed_seed": self.mixed_seed,
            "deck_size": self.deck_size,
            "deal": list(self.deal),
            "reshuffles": [
                {"label": item.label, "size": item.size, "permutation": list(item.permutation)}
                for item in self.reshuffles
            ],
            "first_dealer": (
                None
                if self.first_dealer is None
                else {
                    "player_count": self.first_dealer.player_count,
                    "seat": self.first_dealer.seat,
                }
            ),
        }


def _parse_hex(field: str, text: object) -> bytes:
    if not isinstance(text, str) or not _HEX_PATTERN.fullmatch(text):
        msg = f"{field} must be an even number of hex digits, got {text!r}"
        raise VerificationError(VerificationFailure.INVALID_HEX, msg)
    return bytes.fromhex(text)


def _check_count(field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        msg = f"{field} must be an int in {low}..{high}, got {value!r}"
        raise VerificationError(VerificationFailure.INVALID_INPUT, msg)
    return value


def verify_round(
    commitment_hex: str,
    seed_hex: str,
    client_seeds_hex: Sequence[str],
    version: str,
    deck_size: int,
    *,
    reshuffle_sizes: Sequence[int] = (),
    player_count: int | None = None,
) -> VerificationResult:
    """Check ``seed`` against ``commitment`` and recompute the round's streams.

    ``version`` is the tag stored with the round, not necessarily the current
    :data:`rng.streams.ALGORITHM_VERSION`; ``client_seeds_hex`` are in the order the round
    mixed them.

    Raises :class:`VerificationError` with a :class:`VerificationFailure` on any problem;
    returns a :class:`VerificationResult` only when the commitment matches.
    """
    try:
        algorithm = get_algorithm(version)
    except UnknownVersionError as error:
        raise VerificationError(VerificationFailure.UNKNOWN_VERSION, str(error)) from None
    commitment_bytes = _parse_hex("commitment", commitment_hex)
    seed = _parse_hex("seed", seed_hex)
    if isinstance(client_seeds_hex, str) or not isinstance(client_seeds_hex, Sequence):
        msg = "client_seeds_hex must be a sequence of hex strings"
        raise VerificationError(VerificationFailure.INVALID_INPUT, msg)
    client_seeds = [
        _parse_hex(f"client seed {position}", text)
        for position, text in enumerate(client_seeds_hex)
    ]
    _check_count("deck_size", deck_size, 1, MAX_PERMUTATION_SIZE)
    if isinstance(reshuffle_sizes, str) or not isinstance(reshuffle_sizes, Sequence):
        msg = "reshuffle_sizes must be a sequence of ints"
        raise VerificationError(VerificationFailure.INVALID_INPUT, msg)
    _check_count("number of reshuffles", len(reshuffle_sizes), 0, MAX_RESHUFFLES)
    for number, size in enumerate(reshuffle_sizes, start=1):
        _check_count(f"size of {reshuffle_label(number)}", size, 1, MAX_PERMUTATION_SIZE)
    if player_count is not None:
        _check_count("player_count", player_count, 1, MAX_PLAYER_COUNT)
    try:
        expected_commitment = algorithm.commitment(seed)
        mixed_seed = algorithm.mix_client_seeds(seed, client_seeds)
    except RngError as error:
        raise VerificationError(VerificationFailure.INVALID_INPUT, str(error)) from None
    if not hmac.compare_digest(bytes.fromhex(expected_commitment), commitment_bytes):
        msg = (
            f"the seed does not match the commitment: under {algorithm.version} the seed "
            f"commits to {expected_commitment}, the published commitment is "
            f"{commitment_bytes.hex()}"
        )
        raise VerificationError(VerificationFailure.COMMITMENT_MISMATCH, msg)

    # The very functions the service deals with, so verification cannot drift from dealing.
    def stream_permutation(label: str, size: int) -> tuple[int, ...]:
        return tuple(derive_stream(seed, label, client_seeds, algorithm.version).permutation(size))

    deal = stream_permutation(DEAL_LABEL, deck_size)
    reshuffles = tuple(
        ReshuffleResult(
            label=reshuffle_label(number),
            size=size,
            permutation=stream_permutation(reshuffle_label(number), size),
        )
        for number, size in enumerate(reshuffle_sizes, start=1)
    )
    first_dealer = None
    if player_count is not None:
        dealer_stream = derive_stream(seed, FIRST_DEALER_LABEL, client_seeds, algorithm.version)
        first_dealer = FirstDealerDraw(
            player_count=player_count, seat=dealer_stream.randbelow(player_count)
        )
    return VerificationResult(
        version=algorithm.version,
        commitment=expected_commitment,
        seed=seed.hex(),
        client_seeds=tuple(client_seed.hex() for client_seed in client_seeds),
        mixed_seed=mixed_seed.hex(),
        deck_size=deck_size,
        deal=deal,
        reshuffles=reshuffles,
        first_dealer=first_dealer,
    )
