"""The RNG service's contract with its callers: what it returns, how it refuses, what it accepts.

:class:`rng.service.RngService` returns the records below and refuses with
:class:`RngServiceError` (a machine-readable :class:`RngErrorCode`, the API's error ``code``);
the argument checks here are the ones it applies before touching the database.  Pure: no I/O.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from rng.errors import RngError
from rng.shuffle import MAX_PERMUTATION_SIZE

if TYPE_CHECKING:
    import datetime as dt

    from rng.algorithms import Algorithm

__all__ = (
    "MAX_CONTRIBUTOR_LENGTH",
    "MAX_FIXED_DRAW",
    "MAX_ROUND_NUMBER",
    "DrawnStream",
    "PublicRound",
    "RngErrorCode",
    "RngServiceError",
    "RoundCommitment",
    "associated_data",
    "check_contributor",
    "check_label",
    "check_round_number",
    "check_script",
    "check_uuid",
    "round_not_found",
)

MAX_CONTRIBUTOR_LENGTH: Final = 64
"""The longest contributor name, in visible ASCII characters."""
MAX_ROUND_NUMBER: Final = 2**31 - 1
"""The largest round number (a PostgreSQL ``integer``)."""
MAX_FIXED_DRAW: Final = 2**63 - 1
"""The largest scripted ``randbelow`` result (a PostgreSQL ``bigint``)."""
_ASSOCIATED_DATA_PREFIX: Final = b"raiz-rng/round/"


class RngErrorCode(StrEnum):
    """Why the service refused a call; the value is the API error ``code``."""

    ROUND_NOT_FOUND = "round_not_found"
    """No round has this id."""
    ROUND_EXISTS = "round_exists"
    """The table already committed a round with this number."""
    ROUND_REVEALED = "round_revealed"
    """The seed is public: no more streams can be drawn."""
    CLIENT_SEEDS_CLOSED = "client_seeds_closed"
    """A stream was drawn or the round was revealed; client seeds can no longer change it."""
    CLIENT_SEED_INVALID = "client_seed_invalid"
    """The client seed breaks the version's rules (type, length)."""
    CONTRIBUTOR_INVALID = "contributor_invalid"
    """The contributor is not 1..64 visible ASCII characters."""
    ALREADY_CONTRIBUTED = "already_contributed"
    """This contributor already added a client seed to the round."""
    TOO_MANY_CLIENT_SEEDS = "too_many_client_seeds"
    """The round holds the version's maximum number of client seeds."""
    LABEL_INVALID = "label_invalid"
    """The stream label breaks the version's rules."""
    INVALID_ARGUMENT = "invalid_argument"
    """An id or round number has the wrong type or is out of range."""
    FIXED_DECKS_DISABLED = "fixed_decks_disabled"
    """Fixed streams are test-only and this service does not allow them."""
    FIXED_STREAM_INVALID = "fixed_stream_invalid"
    """The scripted result is not exactly one valid permutation or draw."""
    FIXED_STREAM_EXISTS = "fixed_stream_exists"
    """A fixed stream is already registered for this table, round number and label."""
    STREAM_ALREADY_DRAWN = "stream_already_drawn"
    """The stream was already drawn; fixing it now would change history."""


class RngServiceError(RngError):
    """A refused call: a ``code``, a human ``message`` and JSON-ready ``details``."""

    def __init__(
        self, code: RngErrorCode, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def __repr__(self) -> str:
        return f"RngServiceError(code={self.code.value!r}, message={self.message!r})"


@dataclass(frozen=True, slots=True)
class RoundCommitment:
    """What :meth:`RngService.commit_round` returns: public from the start."""

    id: uuid.UUID
    """The round id to pass to every other method."""
    commitment: str
    """Lowercase hex commitment to the seed."""
    version: str
    """The algorithm version the round uses."""
    committed_at: dt.datetime
    """When the commitment was recorded."""


@dataclass(frozen=True, slots=True)
class DrawnStream:
    """One labelled stream a round has drawn."""

    label: str
    """The stream label."""
    fixed: bool
    """True if a test-only fixed stream replaced the seeded one."""
    drawn_at: dt.datetime
    """When it was first drawn."""


@dataclass(frozen=True, slots=True)
class PublicRound:
    """Everything about a round anyone may see; ``seed`` only once revealed."""

    id: uuid.UUID
    """The round id."""
    table_ref: uuid.UUID
    """The game table."""
    round_number: int
    """The round number at that table."""
    version: str
    """The algorithm version tag; verify with these rules."""
    commitment: str
    """Lowercase hex commitment, published before the deal."""
    client_seeds: tuple[str, ...]
    """The client seeds in mixing order, lowercase hex."""
    contributors: tuple[str, ...]
    """Who contributed each client seed, in the same order."""
    seed: str | None
    """The revealed seed, lowercase hex; None until the reveal."""
    committed_at: dt.datetime
    """When the commitment was recorded."""
    revealed_at: dt.datetime | None
    """When the seed was revealed, or None."""
    streams: tuple[DrawnStream, ...]
    """The streams drawn so far, in the order they were first drawn."""


def associated_data(round_id: uuid.UUID) -> bytes:
    """The seal's associated data: ``b"raiz-rng/round/" || round_id.bytes`` (16 bytes)."""
    return _ASSOCIATED_DATA_PREFIX + round_id.bytes


def check_uuid(name: str, value: object) -> uuid.UUID:
    if not isinstance(value, uuid.UUID):
        raise RngServiceError(
            RngErrorCode.INVALID_ARGUMENT,
            f"{name} must be a UUID, not {type(value).__name__}",
            {"field": name},
        )
    return value


def check_round_number(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ROUND_NUMBER:
        raise RngServiceError(
            RngErrorCode.INVALID_ARGUMENT,
            f"round_number must be an int in 0..{MAX_ROUND_NUMBER}",
            {"field": "round_number"},
        )
    return value


def check_contributor(value: object) -> str:
    if (
        not isinstance(value, str)
        or not 1 <= len(value) <= MAX_CONTRIBUTOR_LENGTH
        or not all("!" <= character <= "~" for character in value)
    ):
        raise RngServiceError(
            RngErrorCode.CONTRIBUTOR_INVALID,
            f"contributor must be 1..{MAX_CONTRIBUTOR_LENGTH} visible ASCII characters",
            {"max_length": MAX_CONTRIBUTOR_LENGTH},
        )
    return value


def check_label(algorithm: Algorithm, label: object) -> str:
    try:
        algorithm.check_label(label)  # type: ignore[arg-type]
    except RngError as error:
        raise RngServiceError(RngErrorCode.LABEL_INVALID, str(error)) from None
    assert isinstance(label, str)
    return label


def round_not_found(round_id: uuid.UUID) -> RngServiceError:
    return RngServiceError(
        RngErrorCode.ROUND_NOT_FOUND, "no round has this id", {"round_id": str(round_id)}
    )


def check_script(permutation: object, draw: object) -> list[int] | int:
    if (permutation is None) == (draw is None):
        raise RngServiceError(
            RngErrorCode.FIXED_STREAM_INVALID, "give exactly one of permutation or draw"
        )
    if draw is not None:
        if isinstance(draw, bool) or not isinstance(draw, int) or not 0 <= draw <= MAX_FIXED_DRAW:
            raise RngServiceError(
                RngErrorCode.FIXED_STREAM_INVALID,
                f"draw must be an int in 0..{MAX_FIXED_DRAW}",
            )
        return draw
    if (
        not isinstance(permutation, list)
        or not 1 <= len(permutation) <= MAX_PERMUTATION_SIZE
        or any(isinstance(item, bool) or not isinstance(item, int) for item in permutation)
        or sorted(permutation) != list(range(len(permutation)))
    ):
        raise RngServiceError(
            RngErrorCode.FIXED_STREAM_INVALID,
            f"permutation must be a list holding each of 0..n-1 once, 1 <= n <= "
            f"{MAX_PERMUTATION_SIZE}",
        )
    return list(permutation)
