"""Concurrency on real PostgreSQL: no overdraft, no deadlock, no double write.

Every task runs on its own connection and transaction, as concurrent API requests do.
"""

from __future__ import annotations

import asyncio
import random
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
)
from tests.helpers import until_others_wait_on_locks

pytestmark = pytest.mark.asyncio

ENTRY_CENTS = 500


async def outcome(run, work):
    """``"ok"``, ``"replayed"`` or the refusal code of one operation in its own transaction."""
    try:
        result = await run(work)
    except LedgerError as error:
        return error.code
    return "replayed" if getattr(result, "replayed", False) else "ok"


async def test_fifty_concurrent_entry_fees_on_a_wallet_that_can_pay_seven(run):
    player = uuid.uuid4()
    await run(lambda ledger: ledger.deposit("dep", player, 7 * ENTRY_CENTS + 499))
    tables = [uuid.uuid4() for _ in range(50)]
    # Every table's escrow exists already, so all 50 race for the same wallet row.
    for table in tables:
        await run(lambda ledger, t=table: ledger.ensure_table_escrow(t))
    barrier = asyncio.Barrier(50)

    async def seat(table: uuid.UUID):
        await barrier.wait()
        return await outcome(
            run,
            lambda ledger: ledger.take_entry(f"entry:{table}:{player}", player, table, ENTRY_CENTS),
        )

    results = await asyncio.gather(*(seat(table) for table in tables))
    assert results.count("ok") == 7
    assert results.count(ErrorCode.INSUFFICIENT_FUNDS) == 43
    wallet = await run(lambda ledger: ledger.ensure_player_wallet(player))
    # The oracle: 7 entries of R$5.00 taken from R$39.99.
    assert wallet.balance_cents == 499
    assert wallet.version == 1 + 7
    escrow_total = await run.scalar(
        "SELECT SUM(balance_cents) FROM ledger.accounts WHERE type = 'table_escrow'"
    )
    assert escrow_total == 7 * ENTRY_CENTS


async def test_concurrent_ring_transfers_never_deadlock(run):
    """N wallets, each paying the next, many times at once, single and batched: with
    accounts locked in id order no transaction waits in a cycle."""
    players = [uuid.uuid4() for _ in range(6)]
    for player in players:
        await run(lambda ledger, p=player: ledger.deposit(f"dep:{p}", p, 10_000))
    rng = random.Random(7)

    async def hop(number: int):
        position = number % len(players)
        source, target = players[position], players[(position + 1) % len(players)]
        amount = rng.randint(1, 50)

        async def work(ledger):
            return await ledger.submit(
                [
                    TransferRequest(
                        f"ring:{number}",
                        ledger.wallet_id(source),
                        ledger.wallet_id(target),
                        amount,
                        TransferKind.ADJUSTMENT,
                    )
                ]
            )

        return await outcome(run, work)

    async def ring_batch(number: int):
        # The whole ring in one batch, starting at a different point each time.
        start = number % len(players)
        order = players[start:] + players[:start]

        async def work(ledger):
            return await ledger.submit(
                [
                    TransferRequest(
                        f"ring-batch:{number}:{index}",
                        ledger.wallet_id(source),
                        ledger.wallet_id(order[(index + 1) % len(order)]),
                        10,
                        TransferKind.ADJUSTMENT,
                    )
                    for index, source in enumerate(order)
                ]
            )

        return await outcome(run, work)

    results = await asyncio.gather(
        *(hop(number) for number in range(240)), *(ring_batch(number) for number in range(40))
    )
    assert results == ["ok"] * 280
    balances = [await run(lambda ledger, p=p: ledger.balance(ledger.wallet_id(p))) for p in players]
    assert sum(balances) == 6 * 10_000


async def test_concurrent_submissions_of_one_id_write_it_once(run):
    player = uuid.uuid4()
    await run(lambda ledger: ledger.deposit("dep", player, 10_000))
    table = uuid.uuid4()
    barrier = asyncio.Barrier(20)

    async def seat():
        await barrier.wait()
        return await outcome(
            run, lambda ledger: ledger.take_entry("entry:same", player, table, ENTRY_CENTS)
        )

    results = await asyncio.gather(*(seat() for _ in range(20)))
    assert sorted(results) == ["ok"] + ["replayed"] * 19
    assert await run(lambda ledger: ledger.balance(ledger.wallet_id(player))) == 9_500


async def test_a_racing_different_body_for_the_same_id_ends_as_a_conflict(run, database_url):
    """Two bodies under one id touching different accounts are not serialised by account
    locks: the loser waits on the unique index, then runs again and sees the winner."""
    ana, bia = uuid.uuid4(), uuid.uuid4()
    for player in (ana, bia):
        await run(lambda ledger, p=player: ledger.deposit(f"dep:{p}", p, 1_000))
    async with run.sessions() as first:
        await first.begin()
        from ledger import Ledger

        await Ledger(first).withdraw("payout:1", ana, 100)
        loser = asyncio.create_task(
            outcome(run, lambda ledger: ledger.withdraw("payout:1", bia, 100))
        )
        await until_others_wait_on_locks(database_url)
        assert not loser.done(), "the second writer must wait for the first to decide"
        await first.commit()
    assert await loser == ErrorCode.IDEMPOTENCY_CONFLICT
    assert await run(lambda ledger: ledger.balance(ledger.wallet_id(bia))) == 1_000


async def test_a_racing_same_body_waits_then_replays_or_writes_if_the_first_rolls_back(
    run, database_url
):
    from ledger import Ledger

    player = uuid.uuid4()
    await run(lambda ledger: ledger.deposit("dep", player, 1_000))
    for first_commits, expected in ((True, "replayed"), (False, "ok")):
        transfer_id = f"w:{first_commits}"
        async with run.sessions() as first:
            await first.begin()
            await Ledger(first).withdraw(transfer_id, player, 100)
            second = asyncio.create_task(
                outcome(run, lambda ledger, t=transfer_id: ledger.withdraw(t, player, 100))
            )
            await until_others_wait_on_locks(database_url)
            assert not second.done()
            await (first.commit() if first_commits else first.rollback())
        assert await second == expected
    assert await run(lambda ledger: ledger.balance(ledger.wallet_id(player))) == 800


async def test_concurrent_refunds_of_one_entry_under_different_ids_pay_once(run):
    player, table = uuid.uuid4(), uuid.uuid4()
    await run(lambda ledger: ledger.deposit("dep", player, 1_000))
    await run(lambda ledger: ledger.take_entry("entry", player, table, 300))
    barrier = asyncio.Barrier(10)

    async def refund(number: int):
        await barrier.wait()
        return await outcome(run, lambda ledger: ledger.refund_entry(f"refund:{number}", "entry"))

    results = await asyncio.gather(*(refund(number) for number in range(10)))
    assert sorted(results, key=str) == sorted(
        ["ok"] + [ErrorCode.ENTRY_ALREADY_REFUNDED] * 9, key=str
    )
    assert await run(lambda ledger: ledger.balance(ledger.wallet_id(player))) == 1_000


async def test_concurrent_settlements_and_late_entries_on_one_table(run):
    """Settling while players still sit: the escrow lock orders them; the escrow is 0 after
    the settlement and every entry taken before it is in the pool."""
    players = [uuid.uuid4() for _ in range(8)]
    table = uuid.uuid4()
    for player in players:
        await run(lambda ledger, p=player: ledger.deposit(f"d:{p}", p, 1_000))
    await run(lambda ledger: ledger.take_entry("e:first", players[0], table, 100))
    barrier = asyncio.Barrier(len(players) + 3)

    async def seat(player):
        await barrier.wait()
        return await outcome(
            run, lambda ledger: ledger.take_entry(f"e:{player}", player, table, 100)
        )

    async def settle():
        await barrier.wait()
        return await outcome(
            run, lambda ledger: ledger.settle_table("settle", table, 1_000, players[:3])
        )

    results = await asyncio.gather(*(seat(p) for p in players[1:]), *(settle() for _ in range(4)))
    settles = results[len(players) - 1 :]
    assert sorted(settles) == ["ok", "replayed", "replayed", "replayed"]
    settlement = await run(lambda ledger: ledger.find_settlement("settle"))
    escrow = await run(lambda ledger: ledger.ensure_table_escrow(table))
    # Entries after the settlement (by the escrow's version, the order the locks gave).
    late_entries = await run.scalar(
        "SELECT COUNT(*) FROM ledger.entries e JOIN ledger.transfers t ON t.id = e.transfer_id"
        " WHERE e.account_id = :escrow AND t.kind = 'entry_fee' AND e.account_version >"
        " (SELECT MAX(account_version) FROM ledger.entries"
        "  WHERE account_id = :escrow AND transfer_id LIKE 'settle/%')",
        escrow=escrow.id,
    )
    assert escrow.balance_cents == late_entries * 100
    seated = 1 + results[: len(players) - 1].count("ok")
    assert settlement.pool_cents + escrow.balance_cents == 100 * seated
    house = await run(lambda ledger: ledger.system_account(AccountType.HOUSE_REVENUE))
    assert house.balance_cents == settlement.fee_cents


async def test_a_statement_page_agrees_with_its_balance_when_a_write_lands_in_between(run):
    """The account is read, then its entries: a transfer committed in between must not show
    as a line the page's balance does not include (the newest line ends at the balance)."""
    player = uuid.uuid4()
    await run(lambda ledger: ledger.deposit("d1", player, 100))
    wallet = await run(lambda ledger: ledger.ensure_player_wallet(player))
    async with run.sessions() as writer, writer.begin():
        # Holding this lock parks the statement's entries query (it joins the transfers)
        # after its account read; the writer then commits a deposit.
        await writer.execute(text("LOCK TABLE ledger.transfers IN ACCESS EXCLUSIVE MODE"))
        reading = asyncio.create_task(run(lambda ledger: ledger.statement(wallet.id)))
        for _ in range(200):
            waiting = await run.scalar(
                "SELECT COUNT(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                " WHERE NOT l.granted AND c.relname = 'transfers'"
            )
            if waiting:
                break
            await asyncio.sleep(0.02)
        assert waiting, "the statement never waited for the transfers"
        await Ledger(writer).deposit("d2", player, 50)
    statement = await reading
    assert statement.lines[0].balance_after_cents == statement.account.balance_cents
    assert statement.account.version == statement.lines[0].account_version


async def test_a_batch_losing_a_race_on_one_id_leaves_the_callers_transaction_as_it_was(
    run, database_url
):
    """Two bodies of one id on disjoint accounts: the loser's batch inserted its other transfer
    before waiting on the winner's id, and its savepoint must undo that, so a caller that
    carries on and commits records nothing of the refused batch (no transfer without its
    entries, no id burnt)."""
    ana, bia, caio, dani, eva, fabio = (uuid.uuid4() for _ in range(6))
    for player in (ana, bia, caio):
        await run(lambda ledger, p=player: ledger.deposit(f"dep:{p}", p, 1_000))
    for player in (dani, eva, fabio):
        await run(lambda ledger, p=player: ledger.ensure_player_wallet(p))

    def adjustment(ledger: Ledger, transfer_id: str, debit, credit, amount: int):
        return TransferRequest(
            transfer_id, ledger.wallet_id(debit), ledger.wallet_id(credit), amount,
            TransferKind.ADJUSTMENT,
        )  # fmt: skip

    async with run.sessions() as first, run.sessions() as second:
        await first.begin()
        winner = Ledger(first)
        await winner.submit([adjustment(winner, "shared", ana, dani, 100)])

        async def carry_on() -> ErrorCode:
            async with second.begin():
                ledger = Ledger(second)
                with pytest.raises(LedgerError) as caught:
                    await ledger.submit(
                        [
                            adjustment(ledger, "own", caio, eva, 7),
                            adjustment(ledger, "shared", bia, fabio, 100),
                        ]
                    )
                await ledger.withdraw("after", caio, 1)
            return caught.value.code

        loser = asyncio.create_task(carry_on())
        await until_others_wait_on_locks(database_url)
        assert not loser.done(), "the batch must wait on the winner's id"
        await first.commit()
        assert await loser == ErrorCode.IDEMPOTENCY_CONFLICT
    assert await run.scalar("SELECT count(*) FROM ledger.transfers WHERE id = 'own'") == 0
    balances = [
        await run(lambda ledger, p=p: ledger.balance(ledger.wallet_id(p)))
        for p in (ana, bia, caio, dani, eva, fabio)
    ]
    assert balances == [900, 1_000, 999, 100, 0, 0]
