"""How the ledger's named refusals map onto the API's error contract."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from litestar import MediaType, Request, Response

from app.errors import (
    AppError,
    ConflictError,
    NotFoundError,
    UnprocessableError,
    ValidationFailed,
    error_body,
)
from ledger import ErrorCode, LedgerError

__all__ = ("LEDGER_ERROR_TYPES", "app_error", "ledger_error_handler")

_E = ErrorCode
LEDGER_ERROR_TYPES: MappingProxyType[ErrorCode, type[AppError]] = MappingProxyType(
    {
        # 400: the request itself is malformed.
        _E.BATCH_EMPTY: ValidationFailed,
        _E.BATCH_TOO_LARGE: ValidationFailed,
        _E.INVALID_TRANSFER_ID: ValidationFailed,
        _E.DUPLICATE_TRANSFER_ID: ValidationFailed,
        _E.INVALID_KIND: ValidationFailed,
        _E.AMOUNT_MUST_BE_INTEGER: ValidationFailed,
        _E.INVALID_REFERENCE: ValidationFailed,
        _E.INVALID_METADATA: ValidationFailed,
        _E.REVERSAL_TARGET_REQUIRED: ValidationFailed,
        _E.REVERSAL_TARGET_NOT_ALLOWED: ValidationFailed,
        _E.INVALID_CURRENCY: ValidationFailed,
        _E.INVALID_SETTLEMENT_ID: ValidationFailed,
        _E.INVALID_FEE_BPS: ValidationFailed,
        _E.NO_WINNERS: ValidationFailed,
        _E.TOO_MANY_WINNERS: ValidationFailed,
        _E.DUPLICATE_WINNER: ValidationFailed,
        _E.INVALID_LIMIT: ValidationFailed,
        # 404
        _E.ACCOUNT_NOT_FOUND: NotFoundError,
        _E.TRANSFER_NOT_FOUND: NotFoundError,
        # 409: conflicts with what is already recorded.
        _E.IDEMPOTENCY_CONFLICT: ConflictError,
        _E.ALREADY_REVERSED: ConflictError,
        _E.ENTRY_ALREADY_REFUNDED: ConflictError,
        _E.PAYMENT_ALREADY_CREDITED: ConflictError,
        _E.ESCROW_NOT_EMPTY: ConflictError,
        # 422: well-formed, refused by a rule of the accounts involved.
        _E.AMOUNT_MUST_BE_POSITIVE: UnprocessableError,
        _E.AMOUNT_EXCEEDS_LIMIT: UnprocessableError,
        _E.ACCOUNTS_MUST_DIFFER: UnprocessableError,
        _E.CURRENCY_MISMATCH: UnprocessableError,
        _E.ACCOUNT_CLOSED: UnprocessableError,
        _E.ACCOUNT_TYPE_NOT_ALLOWED: UnprocessableError,
        _E.NOT_AN_ENTRY_FEE: UnprocessableError,
        _E.REVERSAL_MISMATCH: UnprocessableError,
        _E.INSUFFICIENT_FUNDS: UnprocessableError,
        _E.BALANCE_LIMIT_EXCEEDED: UnprocessableError,
    }
)
"""The API error class (hence HTTP status) of every ledger code."""


def app_error(error: LedgerError) -> AppError:
    """The API error for a ledger refusal, keeping its code, message and details."""
    error_type = LEDGER_ERROR_TYPES[error.code]
    return error_type(error.message, code=str(error.code), details=dict(error.details))


def ledger_error_handler(
    request: Request[Any, Any, Any], exc: LedgerError
) -> Response[dict[str, Any]]:
    """Exception handler: a ledger refusal escaping a route becomes its 4xx error body."""
    error = app_error(exc)
    return Response(
        content=error_body(error.code, error.message, error.details),
        status_code=error.status_code,
        media_type=MediaType.JSON,
    )
