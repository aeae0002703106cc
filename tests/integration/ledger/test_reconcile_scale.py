"""Reconciliation of a ledger kept ten years: every statement reads one range of ids, never
the whole ledger (each must end within the service's statement timeout, which a whole-ledger
aggregate passed at a few million entries), and the report is that of the whole ledger."""

from __future__ import annotations

import asyncio
import importlib
import uuid
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from ledger import Ledger
from ledger.reconcile import _reconcile, _reconcile_since, reconcile, sweep_reconcile

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


# The audit sweep's incremental reconciliation (ledger.reconcile's docstring): each sweep
# checks the entries above the previous sweep's mark, and the mark never passes an entry id
# whose transaction may still commit.


async def test_an_incremental_reconciliation_reads_only_the_new_entries(run, engine):
    await fill(run, 120)
    full = await sweep_reconcile(engine, None, 5_000)
    assert full.ok and full.kind == "full" and full.entries == 600, full.problems
    assert full.entries_up_to == await run.scalar("SELECT max(id) FROM ledger.entries")
    # one new deposit: its two entries, on a new wallet and on the cash-in account, which
    # holds 120 old entries (the checks must not read them)
    await run(lambda ledger: ledger.deposit("dep:new", uuid.uuid4(), 700))
    async with engine.connect() as connection:
        snapshot = await connection.execution_options(isolation_level="REPEATABLE READ")
        async with snapshot.begin():
            await snapshot.execute(text("SET LOCAL enable_seqscan = off"))
            counting = Counting(snapshot)
            report = await _reconcile_since(counting, full.entries_up_to)  # type: ignore[arg-type]
    assert report.ok, report.problems
    assert report.kind == "incremental" and report.entries_after == full.entries_up_to
    assert (report.accounts, report.transfers, report.entries) == (2, 1, 2)
    # a few index probes per new entry (its predecessor, its transfer's other leg, its
    # account's last entry), nothing of the 600 old ones (the statements' own reads: the
    # transaction's counter may still hold those of the pooled connection's previous one)
    read = sum(entries for entries, _ in counting.reads)
    assert read <= 20, "\n".join(f"{n}: {s[:150]}" for n, s in counting.reads if n)
    following = await sweep_reconcile(engine, full.entries_up_to, 5_000)
    assert following.ok and following.entries == 2
    assert following.entries_up_to == full.entries_up_to + 2


@pytest.mark.ledger_tampering
async def test_an_incremental_reconciliation_catches_a_new_entry_tampered(
    run, engine, database_url
):
    await fill(run, 8)
    mark = (await sweep_reconcile(engine, None, 5_000)).entries_up_to
    player = uuid.uuid4()
    await run(lambda ledger: ledger.deposit("dep:late", player, 700))
    sql = await asyncpg.connect(database_url)
    try:
        await sql.execute("SET session_replication_role = replica")
        # the deposit's credit, one centavo more (its row stays arithmetically consistent)
        await sql.execute(
            "UPDATE ledger.entries SET amount_cents = amount_cents + 1,"
            " balance_after_cents = balance_after_cents + 1"
            " WHERE transfer_id = 'dep:late' AND amount_cents > 0"
        )
    finally:
        await sql.close()
    report = await sweep_reconcile(engine, mark, 5_000)
    assert report.kind == "incremental"
    assert {problem.check for problem in report.problems} == {
        "transfer_balanced",
        "last_entry_is_balance",
    }, report.problems
    # the full reconciliation agrees (and finds the sums the incremental one reads by
    # induction: the entries no longer sum to the balance)
    whole = await reconcile(engine)
    assert {problem.check for problem in whole.problems} >= {
        "transfer_balanced",
        "last_entry_is_balance",
    }


@pytest.mark.ledger_tampering
async def test_the_mark_never_passes_an_entry_whose_transaction_commits_later(run, engine):
    await fill(run, 8)
    mark = (await sweep_reconcile(engine, None, 5_000)).entries_up_to
    assert mark is not None
    late = uuid.uuid4()
    # T1 takes the lower entry ids and stays open; T2 takes higher ids and commits first.
    async with run.sessions() as slow, slow.begin():
        await Ledger(slow).deposit("dep:slow", late, 700)
        # tampered before its commit: its first sweep must report it (the deposit's deferred
        # entries check runs now, before the tamper, which the commit would refuse otherwise)
        await slow.execute(text("SET CONSTRAINTS ALL IMMEDIATE"))
        await slow.execute(text("SET LOCAL session_replication_role = replica"))
        await slow.execute(
            text(
                "UPDATE ledger.entries SET amount_cents = amount_cents + 1,"
                " balance_after_cents = balance_after_cents + 1"
                " WHERE transfer_id = 'dep:slow' AND amount_cents > 0"
            )
        )
        slow_ids = (await slow.execute(text("SELECT max(id) FROM ledger.entries"))).scalar_one()
        table = uuid.uuid4()
        wallet_owner = await run.scalar(
            "SELECT owner_id FROM ledger.accounts WHERE type = 'player_wallet' LIMIT 1"
        )
        await run(lambda ledger: ledger.take_entry("e:fast", wallet_owner, table, 500))
        fast_ids = await run.scalar("SELECT max(id) FROM ledger.entries")
        assert fast_ids > slow_ids
        # A sweep now sees T2's entries, not T1's: it checks T2's, and its mark stays below
        # T1's ids (a mark at the highest visible id would skip T1's entries for ever).
        during = await sweep_reconcile(engine, mark, 200)
        assert during.ok, during.problems
        assert during.entries == 2
        assert during.entries_up_to == mark
        # a sweep that starts while T1 is still open waits for it, then sees it
        since = await run.scalar("SELECT clock_timestamp()")
        waiting = asyncio.create_task(sweep_reconcile(engine, mark, 10_000))
        await _until_settling(run, since)
        assert not waiting.done()
    after = await waiting
    assert after.entries == 4
    assert after.entries_up_to == fast_ids
    assert {problem.check for problem in after.problems} == {
        "transfer_balanced",
        "last_entry_is_balance",
    }, after.problems


async def _until_settling(run: Any, since: Any) -> None:
    """Until a sweep polls (after ``since``) for the end of the transactions it found
    writing entries (its ``virtualxid`` query): where a fixed 0.3 s let a slow machine's sweep
    start after T1 had ended, and the wait went untested."""
    for _ in range(500):
        if await run.scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND query LIKE '%virtualxid = ANY%'"
            " AND query_start > :since",
            since=since,
        ):
            return
        await asyncio.sleep(0.02)
    pytest.fail("no sweep waited for the open transaction")


async def test_the_mark_waits_for_no_transaction_that_does_not_write_entries(
    run, engine, database_url
):
    """Only the transactions writing entries hold the mark: not a long one of another database
    of the cluster (another application's, or another test's), nor a reader of the ledger,
    nor a writer of another table."""
    await fill(run, 8)
    mark = (await sweep_reconcile(engine, None, 5_000)).entries_up_to
    assert mark is not None
    elsewhere = await asyncpg.connect(
        make_url(database_url).set(database="postgres").render_as_string(hide_password=False)
    )
    reader = await asyncpg.connect(database_url)
    writer = await asyncpg.connect(database_url)
    held = [elsewhere.transaction(), reader.transaction(), writer.transaction()]
    try:
        for transaction in held:
            await transaction.start()
        await elsewhere.fetchval("SELECT pg_current_xact_id()")  # an xid, in another database
        await reader.fetchval("SELECT count(*) FROM ledger.entries")
        await writer.fetchval("SELECT pg_current_xact_id()")
        await writer.execute("UPDATE ledger.accounts SET version = version WHERE false")
        await run(lambda ledger: ledger.deposit("dep:meanwhile", uuid.uuid4(), 700))
        report = await sweep_reconcile(engine, mark, 200)
        assert report.ok and report.entries == 2, report.problems
        assert report.entries_up_to == mark + 2
    finally:
        for transaction in held:
            await transaction.rollback()
        for connection in (elsewhere, reader, writer):
            await connection.close()
