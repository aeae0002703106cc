"""The ledger's balance limit (``MAX_BALANCE_CENTS``) on each side of a transfer, at its edge."""

from __future__ import annotations

import uuid

import pytest

from ledger import AccountType, ErrorCode, TransferKind, TransferRequest
from ledger.constants import MAX_BALANCE_CENTS, MAX_TRANSFER_CENTS

pytestmark = pytest.mark.asyncio

BATCH = 250


async def test_a_balance_reaches_the_limit_exactly_and_never_goes_past_it_on_either_side(run):
    rich, other = uuid.uuid4(), uuid.uuid4()
    await run(lambda ledger: ledger.ensure_player_wallet(rich))
    await run(lambda ledger: ledger.ensure_player_wallet(other))
    # 1,000 deposits of the largest amount: the wallet reaches +limit and cash-in -limit exactly
    count = MAX_BALANCE_CENTS // MAX_TRANSFER_CENTS
    for start in range(0, count, BATCH):
        await run(
            lambda ledger, start=start: ledger.submit(
                [
                    TransferRequest(
                        f"big:{n}",
                        ledger.system_account_id(AccountType.CASH_IN),
                        ledger.wallet_id(rich),
                        MAX_TRANSFER_CENTS,
                        TransferKind.DEPOSIT,
                    )
                    for n in range(start, min(start + BATCH, count))
                ]
            )
        )
    assert await run(lambda ledger: ledger.balance(ledger.wallet_id(rich))) == MAX_BALANCE_CENTS
    cash_in = await run(lambda ledger: ledger.system_account(AccountType.CASH_IN))
    assert cash_in.balance_cents == -MAX_BALANCE_CENTS

    def one_more_centavo(ledger):
        # from the prize fund (at 0, may go negative): only the credit side is at its limit
        return ledger.submit(
            [
                TransferRequest(
                    "one-more",
                    ledger.system_account_id(AccountType.PRIZE_FUND),
                    ledger.wallet_id(rich),
                    1,
                    TransferKind.ADJUSTMENT,
                )
            ]
        )

    before = await run.snapshot()
    credit_side = await run.refused(one_more_centavo)
    assert credit_side.code == ErrorCode.BALANCE_LIMIT_EXCEEDED
    assert credit_side.details["max_balance_cents"] == MAX_BALANCE_CENTS
    # into an empty wallet: only the debit side (cash-in, at -limit) is at its limit
    debit_side = await run.refused(lambda ledger: ledger.deposit("dep-other", other, 1))
    assert debit_side.code == ErrorCode.BALANCE_LIMIT_EXCEEDED
    assert await run.snapshot() == before

    # one centavo out, and the same centavo fits again: the limit itself is a valid balance
    await run(lambda ledger: ledger.withdraw("out", rich, 1))
    await run(one_more_centavo)
    assert await run(lambda ledger: ledger.balance(ledger.wallet_id(rich))) == MAX_BALANCE_CENTS
