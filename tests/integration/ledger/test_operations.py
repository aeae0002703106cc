"""The ledger's operations on real PostgreSQL: results, refusals, replays, atomicity."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

from ledger import (
    AccountType,
    ErrorCode,
    Ledger,
    LedgerError,
    TransferKind,
    TransferRequest,
    account_id_for,
)
from ledger import metrics as ledger_metrics

pytestmark = pytest.mark.asyncio


def new_ids(count: int) -> list[uuid.UUID]:
    return [uuid.uuid4() for _ in range(count)]


async def test_system_accounts_exist_after_migration_with_their_deterministic_ids(run):
    for account_type in (
        AccountType.HOUSE_REVENUE,
        AccountType.PRIZE_FUND,
        AccountType.CASH_IN,
        AccountType.CASH_OUT,
    ):
        account = await run(lambda ledger, t=account_type: ledger.system_account(t))
        assert account.id == account_id_for(account_type, "BRL")
        assert account.balance_cents == 0 and account.version == 0
    assert await run.scalar("SELECT COUNT(*) FROM ledger.accounts") == 4


async def test_deposit_entry_and_settlement_move_every_centavo(run):
    ana, bia, caio, dani = new_ids(4)
    table = uuid.uuid4()
    for player in (ana, bia, caio, dani):
        await run(lambda ledger, p=player: ledger.deposit(f"dep:{p}", p, 1_000))
    for seat, player in enumerate((ana, bia, caio, dani)):
        result = await run(
            lambda ledger, p=player, s=seat: ledger.take_entry(
                f"entry:{table}:{p}", p, table, 500, {"seat": s}
            )
        )
        assert result.kind == TransferKind.ENTRY_FEE
        assert result.debit.balance_before_cents == 1_000
        assert result.debit.balance_after_cents == 500
        assert result.credit.balance_after_cents == 500 * (seat + 1)
        assert result.reference == {"seat": seat, "table": str(table), "user": str(player)}

    settlement = await run(
        lambda ledger: ledger.settle_table(f"settle:{table}", table, 1_000, [bia], {"round": 3})
    )
    assert (settlement.pool_cents, settlement.fee_cents, settlement.payouts_cents) == (
        2_000,
        200,
        [1_800],
    )
    assert [t.id for t in settlement.transfers] == [
        f"settle:{table}/fee",
        f"settle:{table}/payout/0",
    ]
    ledger_balance = await run(lambda ledger: ledger.balance(ledger.wallet_id(bia)))
    assert ledger_balance == 500 + 1_800
    house = await run(lambda ledger: ledger.system_account(AccountType.HOUSE_REVENUE))
    assert house.balance_cents == 200
    escrow = await run(lambda ledger: ledger.close_escrow(table))
    assert escrow.balance_cents == 0 and escrow.closed and escrow.closed_version == 6


async def test_co_winners_split_with_the_remainder_to_the_first_in_order(run):
    players = new_ids(3)
    table = uuid.uuid4()
    for player in players:
        await run(lambda ledger, p=player: ledger.deposit(f"dep:{p}", p, 1_000))
        await run(lambda ledger, p=player: ledger.take_entry(f"e:{p}", p, table, 335))
    # pool 1005 at 5%: fee floor(50.25) = 50, net 955 = 318 * 3 + 1
    settlement = await run(
        lambda ledger: ledger.settle_table("s1", table, 500, [players[2], players[0]])
    )
    assert settlement.fee_cents == 50
    assert settlement.payouts_cents == [478, 477]
    balances = [await run(lambda ledger, p=p: ledger.balance(ledger.wallet_id(p))) for p in players]
    assert balances == [665 + 477, 665, 665 + 478]


async def test_zero_fee_and_empty_pool_write_no_zero_amount_transfer(run):
    player, table, empty_table = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await run(lambda ledger: ledger.deposit("dep", player, 300))
    await run(lambda ledger: ledger.take_entry("e", player, table, 300))
    free = await run(lambda ledger: ledger.settle_table("s-free", table, 0, [player]))
    assert [t.id for t in free.transfers] == ["s-free/payout/0"]
    empty = await run(lambda ledger: ledger.settle_table("s-empty", empty_table, 1_000, [player]))
    assert empty.transfers == [] and empty.pool_cents == 0
    replay = await run(lambda ledger: ledger.settle_table("s-empty", empty_table, 1_000, [player]))
    assert replay.replayed and replay.pool_cents == 0


async def test_free_tournament_prize_comes_from_the_operator_prize_fund(run):
    winner, table = uuid.uuid4(), uuid.uuid4()
    await run(lambda ledger: ledger.fund_prize("prize:t1", table, 10_000, {"tournament": "t1"}))
    settlement = await run(lambda ledger: ledger.settle_table("settle:t1", table, 0, [winner]))
    assert settlement.payouts_cents == [10_000]
    fund = await run(lambda ledger: ledger.system_account(AccountType.PRIZE_FUND))
    assert fund.balance_cents == -10_000
    assert await run(lambda ledger: ledger.balance(ledger.wallet_id(winner))) == 10_000


async def test_replay_returns_the_original_result_and_writes_nothing(run):
    player = uuid.uuid4()
    first = await run(lambda ledger: ledger.deposit("dep-1", player, 700, reference={"p": "x"}))
    before = await run.snapshot()
    again = await run(lambda ledger: ledger.deposit("dep-1", player, 700, reference={"p": "x"}))
    assert again.replayed and not first.replayed
    assert (again.debit, again.credit, again.created_at, again.batch_id) == (
        first.debit,
        first.credit,
        first.created_at,
        first.batch_id,
    )
    assert await run.snapshot() == before


async def test_same_id_with_a_different_body_is_an_idempotency_conflict(run):
    player, other = new_ids(2)
    await run(lambda ledger: ledger.deposit("dep-1", player, 700))
    before = await run.snapshot()
    for work in (
        lambda ledger: ledger.deposit("dep-1", player, 701),
        lambda ledger: ledger.deposit("dep-1", other, 700),
        lambda ledger: ledger.deposit("dep-1", player, 700, metadata={"note": "x"}),
        lambda ledger: ledger.withdraw("dep-1", player, 700),
    ):
        error = await run.refused(work)
        assert error.code == ErrorCode.IDEMPOTENCY_CONFLICT
    assert await run.snapshot() == before


async def test_refusals_have_named_codes_and_change_nothing(run):
    player, table, stranger = new_ids(3)
    await run(lambda ledger: ledger.deposit("dep", player, 1_000))
    await run(lambda ledger: ledger.take_entry("entry", player, table, 400))
    await run(lambda ledger: ledger.deposit("dep-x", uuid.uuid4(), 5))
    cases = [
        (lambda ledger: ledger.withdraw("w", player, 601), ErrorCode.INSUFFICIENT_FUNDS),
        (lambda ledger: ledger.take_entry("e2", stranger, table, 1), ErrorCode.INSUFFICIENT_FUNDS),
        (lambda ledger: ledger.deposit("d", player, 0), ErrorCode.AMOUNT_MUST_BE_POSITIVE),
        (lambda ledger: ledger.deposit("d", player, -3), ErrorCode.AMOUNT_MUST_BE_POSITIVE),
        (lambda ledger: ledger.deposit("d", player, 10**13), ErrorCode.AMOUNT_EXCEEDS_LIMIT),
        (lambda ledger: ledger.deposit("bad id", player, 1), ErrorCode.INVALID_TRANSFER_ID),
        (lambda ledger: ledger.refund_entry("r", "nope"), ErrorCode.TRANSFER_NOT_FOUND),
        (lambda ledger: ledger.refund_entry("r", "dep"), ErrorCode.NOT_AN_ENTRY_FEE),
        (lambda ledger: ledger.close_escrow(table), ErrorCode.ESCROW_NOT_EMPTY),
        (lambda ledger: ledger.reverse("rv", "nope"), ErrorCode.TRANSFER_NOT_FOUND),
        (lambda ledger: ledger.settle_table("s", table, -1, [player]), ErrorCode.INVALID_FEE_BPS),
        (lambda ledger: ledger.settle_table("s", table, 100, []), ErrorCode.NO_WINNERS),
        (
            lambda ledger: ledger.submit(
                [
                    TransferRequest(
                        "x", ledger.wallet_id(player), uuid.uuid4(), 1, TransferKind.ADJUSTMENT
                    )
                ]
            ),
            ErrorCode.ACCOUNT_NOT_FOUND,
        ),
        (
            lambda ledger: ledger.submit(
                [
                    TransferRequest(
                        "x", ledger.escrow_id(table), ledger.wallet_id(player), 1,
                        TransferKind.ENTRY_FEE,
                    )
                ]
            ),
            ErrorCode.ACCOUNT_TYPE_NOT_ALLOWED,
        ),
        (
            lambda ledger: ledger.submit(
                [
                    TransferRequest(
                        "x", ledger.wallet_id(player), ledger.wallet_id(player), 1,
                        TransferKind.ADJUSTMENT,
                    )
                ]
            ),
            ErrorCode.ACCOUNTS_MUST_DIFFER,
        ),
    ]  # fmt: skip
    before = await run.snapshot()
    for work, code in cases:
        error = await run.refused(work)
        assert error.code == code, (code, error)
        assert error.message
    assert await run.snapshot() == before


async def test_a_batch_is_atomic_the_first_failure_refuses_it_all(run):
    ana, bia = new_ids(2)
    await run(lambda ledger: ledger.deposit("dep-a", ana, 500))
    await run(lambda ledger: ledger.ensure_player_wallet(bia))
    before = await run.snapshot()

    def batch(ledger: Ledger, second_amount: int) -> list[TransferRequest]:
        a, b = ledger.wallet_id(ana), ledger.wallet_id(bia)
        return [
            TransferRequest("b-1", a, b, 300, TransferKind.ADJUSTMENT),
            TransferRequest("b-2", a, b, second_amount, TransferKind.ADJUSTMENT),
        ]

    error = await run.refused(lambda ledger: ledger.submit(batch(ledger, 201)))
    assert error.code == ErrorCode.INSUFFICIENT_FUNDS
    assert error.details["index"] == 1 and error.details["balance_cents"] == 200
    assert await run.snapshot() == before
    results = await run(lambda ledger: ledger.submit(batch(ledger, 200)))
    assert [r.debit.account_version for r in results] == [2, 3]
    assert results[1].debit.balance_after_cents == 0
    assert len({r.batch_id for r in results}) == 1
    replayed = await run(lambda ledger: ledger.submit(batch(ledger, 200)))
    assert all(r.replayed for r in replayed)
    # Each id is its own idempotency key: a recorded transfer replays on its own too.
    subset = await run(lambda ledger: ledger.submit(batch(ledger, 200)[1:]))
    assert subset[0].replayed and subset[0].debit == results[1].debit
    # A batch mixing recorded and new ids is not the recorded request: refused whole.
    extended = await run.refused(
        lambda ledger: ledger.submit(
            [
                *batch(ledger, 200),
                TransferRequest(
                    "b-3", ledger.wallet_id(bia), ledger.wallet_id(ana), 1, TransferKind.ADJUSTMENT
                ),
            ]
        )
    )
    assert extended.code == ErrorCode.IDEMPOTENCY_CONFLICT


async def test_refund_returns_exactly_the_entry_once(run):
    player, table = uuid.uuid4(), uuid.uuid4()
    await run(lambda ledger: ledger.deposit("dep", player, 1_000))
    entry = await run(lambda ledger: ledger.take_entry("entry", player, table, 450))
    refund = await run(lambda ledger: ledger.refund_entry("refund", entry.id))
    assert refund.kind == TransferKind.ENTRY_REFUND
    assert refund.amount_cents == 450 and refund.reverses_id == "entry"
    assert refund.credit.balance_after_cents == 1_000
    assert refund.reference["entry"] == "entry"
    assert (await run(lambda ledger: ledger.refund_entry("refund", entry.id))).replayed
    error = await run.refused(lambda ledger: ledger.refund_entry("refund-2", entry.id))
    assert error.code == ErrorCode.ENTRY_ALREADY_REFUNDED
    escrow = await run(lambda ledger: ledger.close_escrow(table))
    assert escrow.closed
    assert (await run(lambda ledger: ledger.close_escrow(table))).closed_at == escrow.closed_at
    late = await run.refused(lambda ledger: ledger.take_entry("late", player, table, 1))
    assert late.code == ErrorCode.ACCOUNT_CLOSED
    settle = await run.refused(lambda ledger: ledger.settle_table("s", table, 0, [player]))
    assert settle.code == ErrorCode.ACCOUNT_CLOSED


async def test_a_correction_is_a_reversing_transfer_at_most_once(run):
    player = uuid.uuid4()
    deposit = await run(lambda ledger: ledger.deposit("dep", player, 900))
    reversal = await run(lambda ledger: ledger.reverse("dep:reversal", deposit.id))
    assert reversal.debit_account_id == deposit.credit_account_id
    assert reversal.credit_account_id == deposit.debit_account_id
    assert await run(lambda ledger: ledger.balance(ledger.wallet_id(player))) == 0
    error = await run.refused(lambda ledger: ledger.reverse("dep:reversal-2", deposit.id))
    assert error.code == ErrorCode.ALREADY_REVERSED
    mismatched = await run.refused(
        lambda ledger: ledger.submit(
            [
                TransferRequest(
                    "manual", deposit.credit_account_id, deposit.debit_account_id, 1,
                    TransferKind.REVERSAL, reverses_id=reversal.id,
                )
            ]
        )
    )  # fmt: skip
    assert mismatched.code == ErrorCode.REVERSAL_MISMATCH


async def test_settlement_replay_and_conflict(run):
    ana, bia, table = new_ids(3)
    for player in (ana, bia):
        await run(lambda ledger, p=player: ledger.deposit(f"d:{p}", p, 500))
        await run(lambda ledger, p=player: ledger.take_entry(f"e:{p}", p, table, 500))
    first = await run(lambda ledger: ledger.settle_table("s", table, 1_000, [ana, bia]))
    again = await run(lambda ledger: ledger.settle_table("s", table, 1_000, [ana, bia]))
    assert again.replayed and again.payouts_cents == first.payouts_cents == [450, 450]
    assert [t.id for t in again.transfers] == [t.id for t in first.transfers]
    for work in (
        lambda ledger: ledger.settle_table("s", table, 1_000, [bia, ana]),
        lambda ledger: ledger.settle_table("s", table, 900, [ana, bia]),
        lambda ledger: ledger.settle_table("s", uuid.uuid4(), 1_000, [ana, bia]),
    ):
        assert (await run.refused(work)).code == ErrorCode.IDEMPOTENCY_CONFLICT


async def test_currency_mismatch_is_refused(run, engine):
    player = uuid.uuid4()
    await run(lambda ledger: ledger.deposit("dep", player, 100))
    usd = uuid.uuid4()
    async with engine.begin() as connection:
        await connection.execute(
            text(
                "INSERT INTO ledger.accounts (id, type, currency, may_go_negative)"
                " VALUES (:id, 'cash_in', 'USD', true)"
            ),
            {"id": usd},
        )
    error = await run.refused(
        lambda ledger: ledger.submit(
            [TransferRequest("fx", ledger.wallet_id(player), usd, 1, TransferKind.ADJUSTMENT)]
        )
    )
    assert error.code == ErrorCode.CURRENCY_MISMATCH
    with pytest.raises(LedgerError) as caught:
        Ledger(None, currency="USD")  # type: ignore[arg-type]
    assert caught.value.code == ErrorCode.INVALID_CURRENCY


async def test_a_refusal_leaves_the_callers_transaction_usable(run):
    """The game service may catch a refusal and go on in the same transaction."""
    player = uuid.uuid4()
    async with run.sessions() as session, session.begin():
        ledger = Ledger(session)
        await ledger.deposit("dep", player, 100)
        with pytest.raises(LedgerError):
            await ledger.withdraw("w-too-much", player, 101)
        with pytest.raises(LedgerError):
            await ledger.take_entry("e-new-table", player, uuid.uuid4(), 500)
        await ledger.withdraw("w", player, 40)
    assert await run(lambda ledger: ledger.balance(ledger.wallet_id(player))) == 60
    # The refused entry did not even leave the new table's escrow behind.
    assert await run.scalar("SELECT COUNT(*) FROM ledger.accounts WHERE type='table_escrow'") == 0


async def test_statement_pages_newest_first_with_reference_and_balance_after(run):
    player, table = uuid.uuid4(), uuid.uuid4()
    for number in range(5):
        await run(lambda ledger, n=number: ledger.deposit(f"d{n}", player, 100 + n))
    await run(lambda ledger: ledger.take_entry("e", player, table, 50, {"seat": 2}))
    wallet = await run(lambda ledger: ledger.ensure_player_wallet(player))
    first = await run(lambda ledger: ledger.statement(wallet.id, limit=4))
    assert [line.account_version for line in first.lines] == [6, 5, 4, 3]
    assert first.lines[0].kind == "entry_fee" and first.lines[0].amount_cents == -50
    assert first.lines[0].reference == {"seat": 2, "table": str(table), "user": str(player)}
    assert first.lines[0].balance_after_cents == wallet.balance_cents == 510 - 50
    assert first.lines[0].counterparty_account_id == account_id_for(
        AccountType.TABLE_ESCROW, "BRL", table
    )
    assert first.next_before_version == 3
    second = await run(lambda ledger: ledger.statement(wallet.id, limit=4, before_version=3))
    assert [line.account_version for line in second.lines] == [2, 1]
    assert second.next_before_version is None
    assert second.lines[-1].balance_before_cents == 0
    error = await run.refused(lambda ledger: ledger.statement(uuid.uuid4()))
    assert error.code == ErrorCode.ACCOUNT_NOT_FOUND
    assert (await run.refused(lambda ledger: ledger.statement(wallet.id, limit=0))).code == (
        ErrorCode.INVALID_LIMIT
    )


async def test_metrics_count_committed_transfers_refusals_and_replays(run):
    def value(counter, **labels) -> float:
        return counter.labels(**labels)._value.get() if labels else counter._value.get()

    player = uuid.uuid4()
    deposits = value(ledger_metrics.TRANSFERS, kind="deposit")
    cents = value(ledger_metrics.TRANSFERRED_CENTS, kind="deposit")
    refusals = value(ledger_metrics.REFUSALS, code="insufficient_funds")
    replays = value(ledger_metrics.REPLAYS)
    await run(lambda ledger: ledger.deposit("dep", player, 250))
    await run(lambda ledger: ledger.deposit("dep", player, 250))
    await run.refused(lambda ledger: ledger.withdraw("w", player, 251))
    async with run.sessions() as session, session.begin():
        await Ledger(session).deposit("dep-rolled-back", player, 999)
        await session.rollback()
    assert value(ledger_metrics.TRANSFERS, kind="deposit") == deposits + 1
    assert value(ledger_metrics.TRANSFERRED_CENTS, kind="deposit") == cents + 250
    assert value(ledger_metrics.REFUSALS, code="insufficient_funds") == refusals + 1
    assert value(ledger_metrics.REPLAYS) == replays + 1


async def test_transfers_reads_many_in_the_order_asked_and_names_a_missing_one(run):
    player = uuid.uuid4()
    for number in range(3):
        await run(lambda ledger, n=number: ledger.deposit(f"many{n}", player, 100 + n))
    ids = ["many2", "many0", "many1"]
    found = await run(lambda ledger: ledger.transfers(ids))
    assert [transfer.id for transfer in found] == ids
    assert [transfer.amount_cents for transfer in found] == [102, 100, 101]
    singles = [await run(lambda ledger, i=i: ledger.transfer(i)) for i in ids]
    assert found == singles
    assert await run(lambda ledger: ledger.transfers([])) == []
    error = await run.refused(lambda ledger: ledger.transfers(["many0", "nope", "many1"]))
    assert error.code == ErrorCode.TRANSFER_NOT_FOUND
    assert error.details == {"transfer_id": "nope"}


async def test_batch_reads_of_many_tables_equal_the_reads_one_by_one(run):
    """What the compliance loader reads for a batch of tables: escrows, their transfers and
    settlements, in a few queries, equal to the single reads."""
    tables = new_ids(3)
    players = new_ids(2)
    for player in players:
        await run(lambda ledger, p=player: ledger.deposit(f"bdep:{p}", p, 5_000))
    for table in tables[:2]:
        for player in players:
            await run(lambda ledger, p=player, t=table: ledger.take_entry(f"be:{t}:{p}", p, t, 400))
    await run(lambda ledger: ledger.settle_table(f"settle:{tables[0]}", tables[0], 1_000, players))
    await run(lambda ledger: ledger.close_escrow(tables[0]))

    async def batch(ledger):
        escrows = [ledger.escrow_id(table) for table in tables]
        return (
            await ledger.find_accounts(escrows),
            await ledger.account_transfers(escrows),
            await ledger.find_settlements([f"settle:{table}" for table in tables]),
        )

    accounts, histories, settlements = await run(batch)
    for table in tables:
        escrow = account_id_for(AccountType.TABLE_ESCROW, "BRL", table)
        assert accounts.get(escrow) == await run(lambda ledger, e=escrow: ledger.find_account(e))
        expected = []
        if table != tables[2]:
            single = await run(lambda ledger, e=escrow: ledger.statement(e, limit=500))
            expected = [
                await run(lambda ledger, i=line.transfer_id: ledger.transfer(i))
                for line in reversed(single.lines)
            ]
        assert histories[escrow] == expected
        settlement = await run(lambda ledger, t=table: ledger.find_settlement(f"settle:{t}"))
        assert settlements.get(f"settle:{table}") == settlement
    first = account_id_for(AccountType.TABLE_ESCROW, "BRL", tables[0])
    assert [t.kind for t in histories[first]] == [
        TransferKind.ENTRY_FEE,
        TransferKind.ENTRY_FEE,
        TransferKind.HOUSE_FEE,
        TransferKind.PAYOUT,
        TransferKind.PAYOUT,
    ]
    assert tables[2] not in {a.owner_id for a in accounts.values()}  # no escrow, no entry
    assert f"settle:{tables[1]}" not in settlements
