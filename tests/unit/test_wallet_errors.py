"""Every ledger refusal code maps to one API error status, with code and details kept."""

from __future__ import annotations

import pytest

from app.errors import AuthenticationError
from app.wallet.errors import LEDGER_ERROR_TYPES, app_error
from app.wallet.webhook import sign, verify_signature
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


def test_webhook_signatures_are_hmac_sha256_of_the_raw_body():
    # Known answer: RFC 4231-style check with Python's hmac, hex-encoded, prefixed.
    assert sign("key", b"The quick brown fox jumps over the lazy dog") == (
        "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
    )
    verify_signature("key", b"{}", sign("key", b"{}"))
    for header in (None, "", "sha256=", sign("key", b"{} "), sign("other", b"{}")):
        with pytest.raises(AuthenticationError):
            verify_signature("key", b"{}", header)
