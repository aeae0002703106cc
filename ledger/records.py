"""Value objects crossing the ledger's interface, and the pure checks of a request.

Everything here is immutable and detached from any database session.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ledger.constants import (
    FEE_BPS_DENOMINATOR,
    MAX_BATCH_TRANSFERS,
    MAX_JSON_BYTES,
    MAX_SETTLEMENT_ID_LENGTH,
    MAX_TRANSFER_CENTS,
    MAX_TRANSFER_ID_LENGTH,
    MAX_WINNERS,
    TransferKind,
)
from ledger.errors import ErrorCode, LedgerError

__all__ = (
    "Account",
    "EntryLeg",
    "Settlement",
    "Statement",
    "StatementLine",
    "TransferRequest",
    "TransferResult",
    "canonical_json",
    "check_amount",
    "check_json_object",
    "check_transfer_id",
    "sha256_of",
    "validate_batch",
    "validate_settlement",
)

TRANSFER_ID_PATTERN = re.compile(rf"[\x21-\x7e]{{1,{MAX_TRANSFER_ID_LENGTH}}}")
"""Printable ASCII without spaces: ids end up in logs, URLs and statements.  Used with
``fullmatch``: ``$`` would also match before a final newline."""
SETTLEMENT_ID_PATTERN = re.compile(rf"[\x21-\x7e]{{1,{MAX_SETTLEMENT_ID_LENGTH}}}")
"""Like transfer ids, shorter: ``{settlement_id}/payout/{position}`` must fit 128."""

JsonObject = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class TransferRequest:
    """A transfer the caller wants written; ``id`` is its idempotency key."""

    id: str
    """Chosen by the caller, 1..128 printable ASCII characters, unique forever."""
    debit_account_id: uuid.UUID
    """Loses ``amount_cents``."""
    credit_account_id: uuid.UUID
    """Gains ``amount_cents``."""
    amount_cents: int
    """Strictly positive, at most ``MAX_TRANSFER_CENTS``."""
    kind: TransferKind
    """Why the money moves; decides which account types may be debited and credited."""
    reference: JsonObject = field(default_factory=dict)
    """What the money is for: ``{"table": ..., "round": ..., "payment": ...}``."""
    metadata: JsonObject = field(default_factory=dict)
    """Free-form context."""
    reverses_id: str | None = None
    """For ``reversal`` and ``entry_refund``: the transfer being undone."""

    def canonical(self) -> dict[str, Any]:
        """The fields that define the request, as plain JSON values."""
        return {
            "id": self.id,
            "debit_account_id": str(self.debit_account_id),
            "credit_account_id": str(self.credit_account_id),
            "amount_cents": self.amount_cents,
            "kind": str(self.kind),
            "reference": dict(self.reference),
            "metadata": dict(self.metadata),
            "reverses_id": self.reverses_id,
        }

    def sha256(self) -> bytes:
        """Hash of the canonical request: a replay must carry exactly this body."""
        return sha256_of(self.canonical())


@dataclass(frozen=True, slots=True)
class EntryLeg:
    """One side of a written transfer on one account."""

    account_id: uuid.UUID
    amount_cents: int
    """Signed: negative on the debit side, positive on the credit side."""
    balance_before_cents: int
    balance_after_cents: int
    account_version: int
    """The account's version after this entry."""


@dataclass(frozen=True, slots=True)
class TransferResult:
    """A transfer as recorded (fresh, or the original one when ``replayed``)."""

    id: str
    batch_id: uuid.UUID
    kind: TransferKind
    amount_cents: int
    currency: str
    debit: EntryLeg
    credit: EntryLeg
    reference: dict[str, Any]
    metadata: dict[str, Any]
    reverses_id: str | None
    created_at: dt.datetime
    replayed: bool = False
    """True when this call wrote nothing and returned the original result."""

    @property
    def debit_account_id(self) -> uuid.UUID:
        """The account that lost the amount."""
        return self.debit.account_id

    @property
    def credit_account_id(self) -> uuid.UUID:
        """The account that gained the amount."""
        return self.credit.account_id


@dataclass(frozen=True, slots=True)
class Account:
    """An account as it stands."""

    id: uuid.UUID
    type: str
    currency: str
    owner_id: uuid.UUID | None
    may_go_negative: bool
    balance_cents: int
    version: int
    created_at: dt.datetime
    closed_at: dt.datetime | None
    closed_version: int | None

    @property
    def closed(self) -> bool:
        """Whether the account takes no more entries."""
        return self.closed_at is not None


@dataclass(frozen=True, slots=True)
class StatementLine:
    """One entry of an account's statement."""

    entry_id: int
    transfer_id: str
    kind: str
    amount_cents: int
    """Signed change of this account's balance."""
    balance_before_cents: int
    balance_after_cents: int
    account_version: int
    counterparty_account_id: uuid.UUID
    reference: dict[str, Any]
    created_at: dt.datetime


@dataclass(frozen=True, slots=True)
class Statement:
    """A page of an account's entries, newest first."""

    account: Account
    lines: list[StatementLine]
    next_before_version: int | None
    """Pass as ``before_version`` for the next (older) page; None on the last page."""


@dataclass(frozen=True, slots=True)
class Settlement:
    """A table's settlement: fee at the snapshotted rate, payouts to the winners."""

    id: str
    table_id: uuid.UUID
    escrow_account_id: uuid.UUID
    fee_bps: int
    pool_cents: int
    fee_cents: int
    winners: list[uuid.UUID]
    payouts_cents: list[int]
    """Same order as ``winners``."""
    reference: dict[str, Any]
    transfers: list[TransferResult]
    """The fee and payout transfers (zero amounts are not written)."""
    created_at: dt.datetime
    replayed: bool = False


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_of(value: Any) -> bytes:
    """SHA-256 of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).digest()


def _is_plain_json(value: Any, depth: int = 0) -> bool:
    # Only exact JSON types: numbers must be integers (no binary fractions near money).
    # PostgreSQL's jsonb cannot store U+0000: such a string would fail the write.
    if depth > 8:
        return False
    if isinstance(value, str):
        return "\x00" not in value
    if value is None or isinstance(value, int):
        return True
    if isinstance(value, list | tuple):
        return all(_is_plain_json(item, depth + 1) for item in value)
    if isinstance(value, Mapping):
        return all(
            isinstance(key, str) and "\x00" not in key and _is_plain_json(item, depth + 1)
            for key, item in value.items()
        )
    return False


def check_transfer_id(transfer_id: Any, *, index: int | None = None) -> None:
    """Refuse an id that is not 1..128 printable ASCII characters."""
    if not isinstance(transfer_id, str) or not TRANSFER_ID_PATTERN.fullmatch(transfer_id):
        raise LedgerError(
            ErrorCode.INVALID_TRANSFER_ID,
            f"A transfer id is 1 to {MAX_TRANSFER_ID_LENGTH} printable ASCII characters "
            "without spaces.",
            _where(index, transfer_id if isinstance(transfer_id, str) else None),
        )


def check_amount(amount_cents: Any, *, index: int | None = None, transfer_id: str = "") -> None:
    """Refuse a non-integer, non-positive or too large amount."""
    where = _where(index, transfer_id or None)
    if isinstance(amount_cents, bool) or not isinstance(amount_cents, int):
        raise LedgerError(ErrorCode.AMOUNT_MUST_BE_INTEGER, "Amounts are whole centavos.", where)
    if amount_cents <= 0:
        raise LedgerError(
            ErrorCode.AMOUNT_MUST_BE_POSITIVE,
            "The amount must be greater than zero.",
            {**where, "amount_cents": amount_cents},
        )
    if amount_cents > MAX_TRANSFER_CENTS:
        raise LedgerError(
            ErrorCode.AMOUNT_EXCEEDS_LIMIT,
            "The amount exceeds the largest transfer allowed.",
            {**where, "amount_cents": amount_cents, "max_amount_cents": MAX_TRANSFER_CENTS},
        )


def check_json_object(
    value: Any, code: ErrorCode, what: str, *, index: int | None = None, transfer_id: str = ""
) -> None:
    """Refuse anything but a small JSON object of strings (no U+0000), integers, lists and
    objects."""
    where = _where(index, transfer_id or None)
    if not isinstance(value, Mapping) or not _is_plain_json(value):
        raise LedgerError(
            code,
            f"The {what} must be a JSON object of strings (without U+0000), integers, lists "
            "and objects.",
            where,
        )
    size = len(canonical_json(value).encode("utf-8"))
    if size > MAX_JSON_BYTES:
        raise LedgerError(
            code,
            f"The {what} is too large.",
            {**where, "size_bytes": size, "max_size_bytes": MAX_JSON_BYTES},
        )


def validate_batch(requests: Sequence[TransferRequest]) -> None:
    """Every check that needs no database, in a fixed order; raises the first failure."""
    if not requests:
        raise LedgerError(ErrorCode.BATCH_EMPTY, "A batch needs at least one transfer.")
    if len(requests) > MAX_BATCH_TRANSFERS:
        raise LedgerError(
            ErrorCode.BATCH_TOO_LARGE,
            "Too many transfers in one batch.",
            {"count": len(requests), "max_count": MAX_BATCH_TRANSFERS},
        )
    seen: set[str] = set()
    for index, request in enumerate(requests):
        check_transfer_id(request.id, index=index)
        if request.id in seen:
            raise LedgerError(
                ErrorCode.DUPLICATE_TRANSFER_ID,
                "The same transfer id appears twice in the batch.",
                _where(index, request.id),
            )
        seen.add(request.id)
        where = _where(index, request.id)
        if request.kind not in TransferKind.__members__.values():
            raise LedgerError(ErrorCode.INVALID_KIND, "Unknown transfer kind.", where)
        check_amount(request.amount_cents, index=index, transfer_id=request.id)
        if request.debit_account_id == request.credit_account_id:
            raise LedgerError(
                ErrorCode.ACCOUNTS_MUST_DIFFER,
                "The debit and credit accounts must be different.",
                {**where, "account_id": str(request.debit_account_id)},
            )
        check_json_object(
            request.reference, ErrorCode.INVALID_REFERENCE, "reference", index=index,
            transfer_id=request.id,
        )  # fmt: skip
        check_json_object(
            request.metadata, ErrorCode.INVALID_METADATA, "metadata", index=index,
            transfer_id=request.id,
        )  # fmt: skip
        reverses = request.kind in (TransferKind.REVERSAL, TransferKind.ENTRY_REFUND)
        if reverses and request.reverses_id is None:
            raise LedgerError(
                ErrorCode.REVERSAL_TARGET_REQUIRED,
                "A reversal or refund must name the transfer it undoes.",
                where,
            )
        if not reverses and request.reverses_id is not None:
            raise LedgerError(
                ErrorCode.REVERSAL_TARGET_NOT_ALLOWED,
                "Only reversals and refunds may name a transfer they undo.",
                where,
            )
        if request.reverses_id is not None:
            check_transfer_id(request.reverses_id, index=index)


def validate_settlement(
    settlement_id: Any, fee_bps: Any, winners: Sequence[Any], reference: Any
) -> None:
    """Every check of a settlement request that needs no database, in a fixed order."""
    if not isinstance(settlement_id, str) or not SETTLEMENT_ID_PATTERN.fullmatch(settlement_id):
        raise LedgerError(
            ErrorCode.INVALID_SETTLEMENT_ID,
            f"A settlement id is 1 to {MAX_SETTLEMENT_ID_LENGTH} printable ASCII characters "
            "without spaces.",
        )
    if (
        isinstance(fee_bps, bool)
        or not isinstance(fee_bps, int)
        or not 0 <= fee_bps <= FEE_BPS_DENOMINATOR
    ):
        raise LedgerError(
            ErrorCode.INVALID_FEE_BPS,
            f"The fee rate is a whole number of basis points within 0..{FEE_BPS_DENOMINATOR}.",
        )
    if not winners:
        raise LedgerError(ErrorCode.NO_WINNERS, "A settlement needs at least one winner.")
    if len(winners) > MAX_WINNERS:
        raise LedgerError(
            ErrorCode.TOO_MANY_WINNERS,
            "Too many winners.",
            {"count": len(winners), "max_count": MAX_WINNERS},
        )
    if len(set(winners)) != len(winners):
        raise LedgerError(ErrorCode.DUPLICATE_WINNER, "A winner appears twice.")
    check_json_object(reference, ErrorCode.INVALID_REFERENCE, "reference")


def _where(index: int | None, transfer_id: str | None) -> dict[str, Any]:
    where: dict[str, Any] = {}
    if index is not None:
        where["index"] = index
    if transfer_id is not None:
        where["transfer_id"] = transfer_id
    return where
