"""Hypothesis drives random deposits, withdrawals, seats, refunds, settlements and closings
against the real ledger on PostgreSQL and against the in-memory oracle: both must make
the same decision every time (same code), hold the same balances, and a refused
operation must leave the database unchanged even though the caller commits afterwards.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from app.db.engine import async_url
from ledger import AccountType, Ledger, LedgerError, reconcile
from tests.integration.ledger.oracle import CASH_IN, CASH_OUT, HOUSE, Oracle, escrow, wallet

USERS = 4
TABLES = 3
ENTRY_FEES = [100, 333, 500, 1_001]
FEE_RATES_BPS = [0, 500, 1_000, 1_250, 10_000]
AMOUNTS = st.one_of(
    st.integers(min_value=1, max_value=2_500),
    # Multiples of the entry fees, so that balances land exactly on zero.
    st.sampled_from([fee * count for fee in ENTRY_FEES for count in (1, 2, 3)]),
    st.sampled_from([0, -1, 10**12 + 1]),
)


class LedgerMachine(RuleBasedStateMachine):
    """One example = fresh users and tables on a shared database (ids never collide)."""

    loop: asyncio.AbstractEventLoop
    engine: AsyncEngine

    def __init__(self) -> None:
        super().__init__()
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self.oracle = Oracle()

    def _run(self, coroutine: Awaitable[Any]) -> Any:
        return self.loop.run_until_complete(coroutine)

    @initialize(
        fees=st.lists(st.sampled_from(FEE_RATES_BPS), min_size=TABLES, max_size=TABLES),
        entry_fees=st.lists(st.sampled_from(ENTRY_FEES), min_size=TABLES, max_size=TABLES),
    )
    def open_tables(self, fees: list[int], entry_fees: list[int]) -> None:
        self.tag = uuid.uuid4().hex[:10]
        self.users = [uuid.uuid4() for _ in range(USERS)]
        self.tables = [uuid.uuid4() for _ in range(TABLES)]
        self.fee_bps = fees
        """The fee rate snapshotted when each table was created."""
        self.entry_cents = entry_fees

        async def system_balances(ledger: Ledger) -> dict[str, int]:
            return {
                HOUSE: await ledger.balance(ledger.system_account_id(AccountType.HOUSE_REVENUE)),
                CASH_IN: await ledger.balance(ledger.system_account_id(AccountType.CASH_IN)),
                CASH_OUT: await ledger.balance(ledger.system_account_id(AccountType.CASH_OUT)),
            }

        # System accounts are shared by every example: the oracle starts from them.
        self.oracle.balances.update(self._run(self._transaction(system_balances)))

    # -- plumbing -------------------------------------------------------------------------

    async def _transaction(self, work: Callable[[Ledger], Awaitable[Any]]) -> Any:
        async with self.sessions() as session, session.begin():
            return await work(Ledger(session))

    async def _outcome(self, work: Callable[[Ledger], Awaitable[Any]]) -> str:
        """Run ``work``; on a refusal commit anyway: the ledger itself must have written
        nothing."""
        async with self.sessions() as session, session.begin():
            try:
                result = await work(Ledger(session))
            except LedgerError as error:
                return str(error.code)
        return "replayed" if result.replayed else "ok"

    async def _snapshot(self) -> Any:
        async with self.engine.connect() as connection:
            return (
                await connection.execute(
                    text(
                        "SELECT (SELECT array_agg((id, balance_cents, version, closed_at)::text"
                        "         ORDER BY id) FROM ledger.accounts),"
                        " (SELECT COUNT(*) FROM ledger.transfers),"
                        " (SELECT COUNT(*) FROM ledger.entries),"
                        " (SELECT COUNT(*) FROM ledger.settlements)"
                    )
                )
            ).one()

    def _check(self, work: Callable[[Ledger], Awaitable[Any]], expected: str) -> None:
        before = self._run(self._snapshot())
        actual = self._run(self._outcome(work))
        assert actual == expected, (actual, expected)
        if expected not in ("ok",):
            assert self._run(self._snapshot()) == before, "a refusal or replay wrote something"

    # -- rules ----------------------------------------------------------------------------

    @rule(key=st.integers(0, 12), user=st.integers(0, USERS - 1), amount=AMOUNTS)
    def deposit(self, key: int, user: int, amount: int) -> None:
        transfer_id = f"{self.tag}:op:{key}"
        expected = self.oracle.deposit(transfer_id, user, amount)
        self._check(lambda ledger: ledger.deposit(transfer_id, self.users[user], amount), expected)

    @rule(
        key=st.integers(0, 12),
        user=st.integers(0, USERS - 1),
        amount=AMOUNTS,
        offset_from_balance=st.one_of(st.none(), st.sampled_from([-1, 0, 1])),
    )
    def withdraw(self, key: int, user: int, amount: int, offset_from_balance: int | None) -> None:
        transfer_id = f"{self.tag}:op:{key}"
        if offset_from_balance is not None:
            # Cash out everything (or a centavo more or less): the edge of overdraft.
            amount = self.oracle.balance(wallet(user)) + offset_from_balance
        expected = self.oracle.withdraw(transfer_id, user, amount)
        self._check(lambda ledger: ledger.withdraw(transfer_id, self.users[user], amount), expected)

    @rule(
        table=st.integers(0, TABLES - 1),
        user=st.integers(0, USERS - 1),
        other_amount=st.one_of(st.none(), AMOUNTS),
    )
    def take_seat(self, table: int, user: int, other_amount: int | None) -> None:
        transfer_id = f"{self.tag}:entry:{table}:{user}"
        amount = self.entry_cents[table] if other_amount is None else other_amount
        expected = self.oracle.take_entry(transfer_id, user, table, amount)
        self._check(
            lambda ledger: ledger.take_entry(
                transfer_id, self.users[user], self.tables[table], amount
            ),
            expected,
        )

    @rule(
        table=st.integers(0, TABLES - 1), user=st.integers(0, USERS - 1), attempt=st.integers(0, 1)
    )
    def refund_seat(self, table: int, user: int, attempt: int) -> None:
        entry_id = f"{self.tag}:entry:{table}:{user}"
        transfer_id = f"{self.tag}:refund:{table}:{user}:{attempt}"
        expected = self.oracle.refund_entry(transfer_id, entry_id)
        self._check(lambda ledger: ledger.refund_entry(transfer_id, entry_id), expected)

    @rule(
        table=st.integers(0, TABLES - 1),
        winners=st.lists(st.integers(0, USERS - 1), min_size=1, max_size=USERS, unique=True),
        fee_override=st.sampled_from([None, None, None, -1, 250]),
    )
    def settle(self, table: int, winners: list[int], fee_override: int | None) -> None:
        settlement_id = f"{self.tag}:settle:{table}"
        fee_bps = self.fee_bps[table] if fee_override is None else fee_override
        expected = self.oracle.settle(settlement_id, table, fee_bps, winners)
        self._check(
            lambda ledger: ledger.settle_table(
                settlement_id, self.tables[table], fee_bps, [self.users[w] for w in winners]
            ),
            expected,
        )

    @rule(table=st.integers(0, TABLES - 1))
    def close_table(self, table: int) -> None:
        expected = self.oracle.close(table)
        before = self._run(self._snapshot())
        actual = self._run(self._outcome_of_close(table))
        assert actual == expected, (actual, expected)
        if actual != "ok":
            assert self._run(self._snapshot()) == before

    async def _outcome_of_close(self, table: int) -> str:
        async with self.sessions() as session, session.begin():
            try:
                await Ledger(session).close_escrow(self.tables[table])
            except LedgerError as error:
                return str(error.code)
        return "ok"

    # -- invariants -----------------------------------------------------------------------

    @invariant()
    def balances_match_the_oracle(self) -> None:
        if not hasattr(self, "tag"):
            return

        async def balances(ledger: Ledger) -> dict[Any, int]:
            found: dict[Any, int] = {}
            for index, user in enumerate(self.users):
                account = await ledger.find_account(ledger.wallet_id(user))
                found[wallet(index)] = account.balance_cents if account else 0
            for index, table in enumerate(self.tables):
                account = await ledger.find_account(ledger.escrow_id(table))
                found[escrow(index)] = account.balance_cents if account else 0
            for name, account_type in (
                (HOUSE, AccountType.HOUSE_REVENUE),
                (CASH_IN, AccountType.CASH_IN),
                (CASH_OUT, AccountType.CASH_OUT),
            ):
                found[name] = await ledger.balance(ledger.system_account_id(account_type))
            return found

        actual = self._run(self._transaction(balances))
        expected = {key: self.oracle.balance(key) for key in actual}
        assert actual == expected

    def teardown(self) -> None:
        report = self._run(reconcile(self.engine))
        assert report.ok, report.problems


def test_the_ledger_agrees_with_the_oracle(database_url: str) -> None:
    loop = asyncio.new_event_loop()
    try:
        engine = create_async_engine(async_url(database_url), pool_size=2)
        LedgerMachine.loop = loop
        LedgerMachine.engine = engine
        run_state_machine_as_test(
            LedgerMachine,
            settings=settings(
                max_examples=25,
                stateful_step_count=40,
                deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
                database=None,
            ),
        )
        loop.run_until_complete(engine.dispose())
    finally:
        loop.close()
