"""The one exception of the ledger, with a named code per failed rule."""

from __future__ import annotations

import enum
from typing import Any

__all__ = ("ErrorCode", "LedgerError")


class ErrorCode(enum.StrEnum):
    """Every reason the ledger refuses an operation (TigerBeetle-style named results)."""

    # The request itself is malformed (checked before touching the database).
    BATCH_EMPTY = "batch_empty"
    BATCH_TOO_LARGE = "batch_too_large"
    INVALID_TRANSFER_ID = "invalid_transfer_id"
    DUPLICATE_TRANSFER_ID = "duplicate_transfer_id"
    INVALID_KIND = "invalid_kind"
    AMOUNT_MUST_BE_INTEGER = "amount_must_be_integer"
    AMOUNT_MUST_BE_POSITIVE = "amount_must_be_positive"
    AMOUNT_EXCEEDS_LIMIT = "amount_exceeds_limit"
    ACCOUNTS_MUST_DIFFER = "accounts_must_differ"
    INVALID_REFERENCE = "invalid_reference"
    INVALID_METADATA = "invalid_metadata"
    REVERSAL_TARGET_REQUIRED = "reversal_target_required"
    REVERSAL_TARGET_NOT_ALLOWED = "reversal_target_not_allowed"
    INVALID_CURRENCY = "invalid_currency"
    INVALID_SETTLEMENT_ID = "invalid_settlement_id"
    INVALID_FEE_BPS = "invalid_fee_bps"
    NO_WINNERS = "no_winners"
    TOO_MANY_WINNERS = "too_many_winners"
    DUPLICATE_WINNER = "duplicate_winner"
    INVALID_LIMIT = "invalid_limit"
    # Missing things.
    ACCOUNT_NOT_FOUND = "account_not_found"
    TRANSFER_NOT_FOUND = "transfer_not_found"
    # Conflicts with what is already recorded.
    IDEMPOTENCY_CONFLICT = "idempotency_conflict"
    ALREADY_REVERSED = "already_reversed"
    ENTRY_ALREADY_REFUNDED = "entry_already_refunded"
    PAYMENT_ALREADY_CREDITED = "payment_already_credited"
    # Refused by a rule of the accounts involved.
    CURRENCY_MISMATCH = "currency_mismatch"
    ACCOUNT_CLOSED = "account_closed"
    ACCOUNT_TYPE_NOT_ALLOWED = "account_type_not_allowed"
    NOT_AN_ENTRY_FEE = "not_an_entry_fee"
    REVERSAL_MISMATCH = "reversal_mismatch"
    INSUFFICIENT_FUNDS = "insufficient_funds"
    BALANCE_LIMIT_EXCEEDED = "balance_limit_exceeded"
    ESCROW_NOT_EMPTY = "escrow_not_empty"


class LedgerError(Exception):
    """An operation the ledger refused; it wrote nothing in the caller's transaction."""

    def __init__(self, code: ErrorCode, message: str, details: dict[str, Any] | None = None):
        super().__init__(f"{code.value}: {message}")
        self.code = code
        """Which rule failed."""
        self.message = message
        """Human-readable explanation."""
        self.details = details or {}
        """JSON-serialisable context (ids, balances, limits)."""
