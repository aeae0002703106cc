"""Reconciliation of a ledger kept ten years: every statement reads one range of ids, never
the whole ledger (each must end within the service's statement timeout, which a whole-ledger
aggregate passed at a few million entries), and the report is that of the whole ledger."""

from __future__ import annotations

import importlib
import uuid
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text

from ledger.reconcile import _reconcile, reconcile

pytestmark = pytest.mark.asyncio

RECONCILE = importlib.import_module("ledger.reconcile")
"""The module (``ledger.reconcile`` is the function, re-exported by the package)."""

READS = """
SELECT COALESCE(SUM(seq_tup_read), 0) + COALESCE(SUM(idx_tup_fetch), 0)
FROM pg_stat_xact_user_tables WHERE schemaname = 'ledger' AND relname = 'entries'
"""
"""Entries read so far in the current transaction (the ledger's biggest table: two a
transfer)."""


class Counting:
    """A connection that records the entries each statement read."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection
        self.reads: list[tuple[int, str]] = []

    async def execute(self, statement: Any, parameters: Any = None) -> Any:
        before = int((await self._connection.execute(text(READS))).scalar_one())
        result = await self._connection.execute(statement, parameters)
        after = int((await self._connection.execute(text(READS))).scalar_one())
        self.reads.append((after - before, str(statement)))
        return result


async def fill(run, wallets: int) -> None:
    """``wallets`` funded players, and tables of four paid, settled and closed."""
    players = [uuid.uuid4() for _ in range(wallets)]
    for player in players:
        await run(lambda ledger, p=player: ledger.deposit(f"dep:{p}", p, 10_000))
    for start in range(0, wallets - 3, 4):
        table = uuid.uuid4()
        for player in players[start : start + 4]:
            await run(lambda ledger, p=player, t=table: ledger.take_entry(f"e:{t}:{p}", p, t, 500))
        await run(
            lambda ledger, t=table, w=players[start]: ledger.settle_table(f"s:{t}", t, 1_000, [w])
        )
        await run(lambda ledger, t=table: ledger.close_escrow(t))


async def test_no_reconciliation_statement_reads_the_whole_ledger(run, engine, monkeypatch):
    await fill(run, 120)
    monkeypatch.setattr(RECONCILE, "CHUNK_KEYS", 10, raising=False)
    async with engine.connect() as connection:
        snapshot = await connection.execution_options(isolation_level="REPEATABLE READ")
        async with snapshot.begin():
            # the plans of a big ledger (on a few hundred rows the planner scans whole tables)
            await snapshot.execute(text("SET LOCAL enable_seqscan = off"))
            counting = Counting(snapshot)
            report = await _reconcile(counting)  # type: ignore[arg-type]
            whole = int((await snapshot.execute(text(READS))).scalar_one())
    assert report.ok, report.problems
    assert (report.accounts, report.transfers, report.entries) == (154, 300, 600)
    # the cash-in account's 120 entries are the most one range of 10 accounts holds; the
    # whole-ledger statements read all 600 entries, several times over
    worst = max(counting.reads)
    assert worst[0] <= 200, worst
    assert whole > 1_200


@pytest.mark.ledger_tampering
async def test_the_report_over_ranges_is_the_report_over_the_whole_ledger(
    run, engine, database_url, monkeypatch
):
    await fill(run, 40)
    sql = await asyncpg.connect(database_url)
    try:
        await sql.execute("SET session_replication_role = replica")
        # many accounts and transfers wrong, in every range: more than a check lists
        await sql.execute(
            "UPDATE ledger.accounts SET balance_cents = balance_cents + 1"
            " WHERE type = 'player_wallet'"
        )
        await sql.execute("UPDATE ledger.transfers SET currency = 'USD' WHERE kind = 'entry_fee'")
        await sql.execute("UPDATE ledger.settlements SET fee_cents = fee_cents + 1")
    finally:
        await sql.close()
    monkeypatch.setattr(RECONCILE, "CHUNK_KEYS", 10**9, raising=False)
    whole = await reconcile(engine)
    monkeypatch.setattr(RECONCILE, "CHUNK_KEYS", 3, raising=False)
    ranged = await reconcile(engine)
    assert not whole.ok
    assert ranged.problems == whole.problems
    assert (ranged.accounts, ranged.transfers, ranged.entries) == (
        whole.accounts,
        whole.transfers,
        whole.entries,
    )
    assert {problem.check for problem in whole.problems} >= {
        "currency_sum",
        "balance_equals_entries",
        "transfer_currency",
        "settlement_arithmetic",
    }
    assert any("more like these" in problem.message for problem in whole.problems)
