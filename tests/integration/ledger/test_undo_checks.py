"""Each check of a reversal or refund submitted as a raw transfer, one broken at a time; and a
batch that would credit one payment twice."""

from __future__ import annotations

import uuid

import pytest

from ledger import AccountType, ErrorCode, TransferKind, TransferRequest

pytestmark = pytest.mark.asyncio


async def test_a_reversal_must_mirror_accounts_and_amount_each_on_its_own(run):
    ana, bia = uuid.uuid4(), uuid.uuid4()
    await run(lambda ledger: ledger.deposit("dep-a", ana, 900))
    await run(lambda ledger: ledger.deposit("dep-b", bia, 900))
    original = await run(
        lambda ledger: ledger.submit(
            [
                TransferRequest(
                    "adj", ledger.wallet_id(ana), ledger.wallet_id(bia), 300,
                    TransferKind.ADJUSTMENT,
                )
            ]
        )
    )  # fmt: skip
    adj = original[0]
    before = await run.snapshot()

    def reversal(ledger, debit, credit, amount):
        return ledger.submit(
            [
                TransferRequest(
                    "rev", debit, credit, amount, TransferKind.REVERSAL, reverses_id="adj"
                )
            ]
        )

    cash_in = await run(lambda ledger: ledger.system_account(AccountType.CASH_IN))
    wrong = [
        # the right accounts, one centavo more or less
        (adj.credit_account_id, adj.debit_account_id, 299),
        (adj.credit_account_id, adj.debit_account_id, 301),
        # the right amount, one account wrong on either side
        (cash_in.id, adj.debit_account_id, 300),
        (adj.credit_account_id, cash_in.id, 300),
    ]
    for debit, credit, amount in wrong:
        error = await run.refused(
            lambda ledger, d=debit, c=credit, a=amount: reversal(ledger, d, c, a)
        )
        assert error.code == ErrorCode.REVERSAL_MISMATCH, (debit, credit, amount, error)
        assert error.details["amount_cents"] == 300
    assert await run.snapshot() == before
    done = await run(
        lambda ledger: reversal(ledger, adj.credit_account_id, adj.debit_account_id, 300)
    )
    assert done[0].reverses_id == "adj"
    balances = [
        await run(lambda ledger, p=p: ledger.balance(ledger.wallet_id(p))) for p in (ana, bia)
    ]
    assert balances == [900, 900]


async def test_a_refund_of_anything_but_an_entry_fee_is_refused_even_on_the_refund_route(run):
    """An adjustment from a wallet to an escrow mirrors like an entry, yet is not one."""
    player, table = uuid.uuid4(), uuid.uuid4()
    await run(lambda ledger: ledger.deposit("dep", player, 500))
    await run(lambda ledger: ledger.ensure_table_escrow(table))
    await run(
        lambda ledger: ledger.submit(
            [
                TransferRequest(
                    "adj", ledger.wallet_id(player), ledger.escrow_id(table), 200,
                    TransferKind.ADJUSTMENT,
                )
            ]
        )
    )  # fmt: skip
    before = await run.snapshot()
    error = await run.refused(
        lambda ledger: ledger.submit(
            [
                TransferRequest(
                    "refund", ledger.escrow_id(table), ledger.wallet_id(player), 200,
                    TransferKind.ENTRY_REFUND, reverses_id="adj",
                )
            ]
        )
    )  # fmt: skip
    assert error.code == ErrorCode.NOT_AN_ENTRY_FEE
    assert await run.snapshot() == before


async def test_one_batch_cannot_refund_an_entry_twice(run):
    player, table = uuid.uuid4(), uuid.uuid4()
    await run(lambda ledger: ledger.deposit("dep", player, 500))
    entry = await run(lambda ledger: ledger.take_entry("entry", player, table, 500))
    before = await run.snapshot()

    def refund(ledger, transfer_id):
        return TransferRequest(
            transfer_id, entry.credit_account_id, entry.debit_account_id, 500,
            TransferKind.ENTRY_REFUND, reverses_id="entry",
        )  # fmt: skip

    error = await run.refused(
        lambda ledger: ledger.submit([refund(ledger, "r-1"), refund(ledger, "r-2")])
    )
    assert error.code == ErrorCode.ENTRY_ALREADY_REFUNDED
    assert error.details["index"] == 1
    assert await run.snapshot() == before
    assert await run(lambda ledger: ledger.balance(ledger.wallet_id(player))) == 0


async def test_one_batch_cannot_credit_a_payment_twice(run):
    ana, bia = uuid.uuid4(), uuid.uuid4()
    await run(lambda ledger: ledger.ensure_player_wallet(ana))
    await run(lambda ledger: ledger.ensure_player_wallet(bia))
    before = await run.snapshot()

    def deposit(ledger, transfer_id, user):
        return TransferRequest(
            transfer_id, ledger.system_account_id(AccountType.CASH_IN), ledger.wallet_id(user),
            1_000, TransferKind.DEPOSIT, reference={"payment": "pay-1"},
        )  # fmt: skip

    error = await run.refused(
        lambda ledger: ledger.submit([deposit(ledger, "d-1", ana), deposit(ledger, "d-2", bia)])
    )
    assert error.code == ErrorCode.PAYMENT_ALREADY_CREDITED
    assert error.details == {"payment": "pay-1", "transfer_id": "d-1"}
    assert await run.snapshot() == before
