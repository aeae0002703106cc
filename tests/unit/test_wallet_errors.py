"""Every ledger refusal code maps to one API error status, with code and details kept."""

from __future__ import annotations

import pytest

from app.wallet.errors import LEDGER_ERROR_TYPES, app_error
from ledger import ErrorCode, LedgerError


def test_every_ledger_code_has_an_http_status():
    assert set(LEDGER_ERROR_TYPES) == set(ErrorCode)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (ErrorCode.IDEMPOTENCY_CONFLICT, 409),
        (ErrorCode.ENTRY_ALREADY_REFUNDED, 409),
        (ErrorCode.INSUFFICIENT_FUNDS, 422),
        (ErrorCode.CURRENCY_MISMATCH, 422),
        (ErrorCode.ACCOUNT_CLOSED, 422),
        (ErrorCode.ACCOUNT_NOT_FOUND, 404),
        (ErrorCode.TRANSFER_NOT_FOUND, 404),
        (ErrorCode.INVALID_TRANSFER_ID, 400),
    ],
)
def test_the_status_of_the_main_codes(code, status):
    error = app_error(LedgerError(code, "why", {"account_id": "a"}))
    assert (error.status_code, error.code, error.message, error.details) == (
        status,
        code.value,
        "why",
        {"account_id": "a"},
    )
