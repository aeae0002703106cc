"""Pure checks of transfer requests: each broken rule gives its own code, in a fixed order."""

from __future__ import annotations

import ast
import uuid
from pathlib import Path

import pytest

from ledger import ErrorCode, LedgerError, TransferKind, TransferRequest
from ledger.constants import (
    MAX_BATCH_TRANSFERS,
    MAX_TRANSFER_CENTS,
    MAY_GO_NEGATIVE,
    SYSTEM_ACCOUNT_TYPES,
    AccountType,
    account_id_for,
)
from ledger.records import validate_batch, validate_settlement

A, B = uuid.uuid4(), uuid.uuid4()
LEDGER_DIR = Path(__file__).resolve().parents[3] / "ledger"


def request(**overrides) -> TransferRequest:
    values = {
        "id": "t-1",
        "debit_account_id": A,
        "credit_account_id": B,
        "amount_cents": 100,
        "kind": TransferKind.ADJUSTMENT,
    }
    values.update(overrides)
    return TransferRequest(**values)


def code_of(requests) -> ErrorCode:
    with pytest.raises(LedgerError) as caught:
        validate_batch(requests)
    return caught.value.code


def test_a_valid_batch_passes():
    validate_batch([request(), request(id="t-2")])


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"id": ""}, ErrorCode.INVALID_TRANSFER_ID),
        ({"id": "has space"}, ErrorCode.INVALID_TRANSFER_ID),
        ({"id": "x" * 129}, ErrorCode.INVALID_TRANSFER_ID),
        ({"id": "t-1\n"}, ErrorCode.INVALID_TRANSFER_ID),
        ({"id": "x" * 128 + "\n"}, ErrorCode.INVALID_TRANSFER_ID),
        ({"id": "ção"}, ErrorCode.INVALID_TRANSFER_ID),
        ({"kind": "gift"}, ErrorCode.INVALID_KIND),
        ({"amount_cents": "100"}, ErrorCode.AMOUNT_MUST_BE_INTEGER),
        ({"amount_cents": True}, ErrorCode.AMOUNT_MUST_BE_INTEGER),
        ({"amount_cents": 1.5}, ErrorCode.AMOUNT_MUST_BE_INTEGER),
        ({"amount_cents": 0}, ErrorCode.AMOUNT_MUST_BE_POSITIVE),
        ({"amount_cents": -5}, ErrorCode.AMOUNT_MUST_BE_POSITIVE),
        ({"amount_cents": MAX_TRANSFER_CENTS + 1}, ErrorCode.AMOUNT_EXCEEDS_LIMIT),
        ({"credit_account_id": A}, ErrorCode.ACCOUNTS_MUST_DIFFER),
        ({"reference": {"x": 0.5}}, ErrorCode.INVALID_REFERENCE),
        ({"reference": ["table"]}, ErrorCode.INVALID_REFERENCE),
        ({"reference": {1: "x"}}, ErrorCode.INVALID_REFERENCE),
        ({"reference": {"x": "y" * 5000}}, ErrorCode.INVALID_REFERENCE),
        ({"reference": {"x": "a\x00b"}}, ErrorCode.INVALID_REFERENCE),
        ({"reference": {"a\x00": "b"}}, ErrorCode.INVALID_REFERENCE),
        ({"metadata": {"note": ["\x00"]}}, ErrorCode.INVALID_METADATA),
        ({"metadata": {"when": object()}}, ErrorCode.INVALID_METADATA),
        ({"kind": TransferKind.REVERSAL}, ErrorCode.REVERSAL_TARGET_REQUIRED),
        ({"kind": TransferKind.ENTRY_REFUND}, ErrorCode.REVERSAL_TARGET_REQUIRED),
        ({"reverses_id": "t-0"}, ErrorCode.REVERSAL_TARGET_NOT_ALLOWED),
        ({"kind": TransferKind.REVERSAL, "reverses_id": " "}, ErrorCode.INVALID_TRANSFER_ID),
    ],
)
def test_each_broken_rule_has_its_own_code(overrides, code):
    assert code_of([request(**overrides)]) == code


def test_batch_rules_and_the_first_failure_wins():
    assert code_of([]) == ErrorCode.BATCH_EMPTY
    assert code_of([request(id=f"t{i}") for i in range(MAX_BATCH_TRANSFERS + 1)]) == (
        ErrorCode.BATCH_TOO_LARGE
    )
    assert code_of([request(), request()]) == ErrorCode.DUPLICATE_TRANSFER_ID
    with pytest.raises(LedgerError) as caught:
        validate_batch([request(), request(id="t-2", amount_cents=0, credit_account_id=A)])
    assert caught.value.code == ErrorCode.AMOUNT_MUST_BE_POSITIVE
    assert caught.value.details["index"] == 1


def test_the_request_hash_is_canonical():
    first = request(reference={"a": 1, "b": [1, "x"]}, metadata={"z": None})
    second = request(metadata={"z": None}, reference={"b": [1, "x"], "a": 1})
    assert first.sha256() == second.sha256()
    assert first.sha256() != request(amount_cents=101).sha256()
    assert first.sha256() != request(reference={"a": 2, "b": [1, "x"]}).sha256()


@pytest.mark.parametrize(
    "change",
    [
        {"debit_account_id": uuid.uuid4()},
        {"credit_account_id": uuid.uuid4()},
        {"amount_cents": 99},
        {"kind": TransferKind.DEPOSIT},
        {"reference": {"table": "t"}},
        {"metadata": {"note": "n"}},
        {"kind": TransferKind.REVERSAL, "reverses_id": "t-0"},
    ],
    ids="+".join,
)
def test_every_field_of_a_request_is_in_its_idempotency_hash(change):
    """A replay must be the same request: the same id moving money from another account, to
    another one, or another amount is a conflict, never the original's result."""
    assert request(**change).sha256() != request().sha256()
    if "reverses_id" in change:
        assert request(**change).sha256() != request(kind=TransferKind.REVERSAL).sha256()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("", 0, [A], {}), ErrorCode.INVALID_SETTLEMENT_ID),
        (("s" * 101, 0, [A], {}), ErrorCode.INVALID_SETTLEMENT_ID),
        (("s" * 100 + "\n", 0, [A], {}), ErrorCode.INVALID_SETTLEMENT_ID),
        (("s", -1, [A], {}), ErrorCode.INVALID_FEE_BPS),
        (("s", 10_001, [A], {}), ErrorCode.INVALID_FEE_BPS),
        (("s", True, [A], {}), ErrorCode.INVALID_FEE_BPS),
        (("s", 0, [], {}), ErrorCode.NO_WINNERS),
        (("s", 0, [uuid.uuid4() for _ in range(101)], {}), ErrorCode.TOO_MANY_WINNERS),
        (("s", 0, [A, B, A], {}), ErrorCode.DUPLICATE_WINNER),
        (("s", 0, [A], {"x": 1.0}), ErrorCode.INVALID_REFERENCE),
    ],
)
def test_settlement_requests_are_checked(args, code):
    with pytest.raises(LedgerError) as caught:
        validate_settlement(*args)
    assert caught.value.code == code


def test_account_ids_are_deterministic_per_type_currency_and_owner():
    owner = uuid.uuid4()
    wallet = account_id_for(AccountType.PLAYER_WALLET, "BRL", owner)
    assert wallet == account_id_for(AccountType.PLAYER_WALLET, "BRL", owner)
    assert wallet != account_id_for(AccountType.TABLE_ESCROW, "BRL", owner)
    assert wallet != account_id_for(AccountType.PLAYER_WALLET, "USD", owner)
    assert len({account_id_for(kind, "BRL") for kind in SYSTEM_ACCOUNT_TYPES}) == 4


def test_wallets_escrows_and_house_revenue_never_go_negative():
    assert not MAY_GO_NEGATIVE[AccountType.PLAYER_WALLET]
    assert not MAY_GO_NEGATIVE[AccountType.TABLE_ESCROW]
    assert not MAY_GO_NEGATIVE[AccountType.HOUSE_REVENUE]
    assert set(MAY_GO_NEGATIVE) == set(AccountType)


def test_no_float_and_no_app_import_in_the_ledger_package():
    for path in LEDGER_DIR.glob("*.py"):
        source = path.read_text()
        assert "float" not in source, path
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("app"), path
            elif isinstance(node, ast.Import):
                assert not any(alias.name.startswith("app") for alias in node.names), path
