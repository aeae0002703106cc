"""Append-only tables refuse UPDATE, DELETE and TRUNCATE at the SQL level; reconciliation
is clean on an honest ledger and names what a tampered one got wrong."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from ledger import reconcile

pytestmark = pytest.mark.asyncio


async def honest_ledger(run) -> dict[str, uuid.UUID]:
    ana, bia, table = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    for player in (ana, bia):
        await run(lambda ledger, p=player: ledger.deposit(f"dep:{p}", p, 1_000))
        await run(lambda ledger, p=player: ledger.take_entry(f"entry:{p}", p, table, 500))
    await run(lambda ledger: ledger.settle_table("settle", table, 1_000, [ana]))
    await run(lambda ledger: ledger.close_escrow(table))
    await run(lambda ledger: ledger.withdraw("out", ana, 300))
    return {"ana": ana, "bia": bia, "table": table}


@pytest.fixture
async def sql(database_url):
    connection = await asyncpg.connect(database_url)
    yield connection
    await connection.close()


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE ledger.transfers SET amount_cents = amount_cents + 1",
        "UPDATE ledger.transfers SET reference = '{}'",
        "DELETE FROM ledger.transfers WHERE kind = 'withdrawal'",
        "TRUNCATE ledger.transfers CASCADE",
        "UPDATE ledger.entries SET balance_after_cents = 0, amount_cents = -balance_before_cents",
        "DELETE FROM ledger.entries",
        "TRUNCATE ledger.entries",
        "UPDATE ledger.settlements SET fee_bps = 0",
        "DELETE FROM ledger.settlements",
        "TRUNCATE ledger.settlements",
        "DELETE FROM ledger.accounts WHERE type = 'player_wallet'",
        "TRUNCATE ledger.accounts CASCADE",
        "UPDATE ledger.accounts SET balance_cents = balance_cents + 100 WHERE type = 'cash_out'",
        "UPDATE ledger.accounts SET version = version - 1 WHERE type = 'cash_out'",
        "UPDATE ledger.accounts SET type = 'prize_fund' WHERE type = 'cash_out'",
        "UPDATE ledger.accounts SET closed_at = NULL, closed_version = NULL"
        " WHERE closed_at IS NOT NULL",
    ],
)
async def test_the_database_refuses_to_rewrite_history(run, sql, statement):
    await honest_ledger(run)
    before = await run.snapshot()
    with pytest.raises(asyncpg.RaiseError):
        await sql.execute(statement)
    assert await run.snapshot() == before


async def test_reconciliation_is_clean_on_an_honest_ledger(run, engine):
    await honest_ledger(run)
    report = await reconcile(engine)
    assert report.ok, report.problems
    assert (report.accounts, report.transfers) == (4 + 2 + 1, 2 + 2 + 2 + 1)
    assert report.entries == 2 * report.transfers
    assert report.summary().startswith("ledger reconcile: ok")


TAMPERING = [
    (
        "UPDATE ledger.accounts SET balance_cents = balance_cents + 1 WHERE type = 'house_revenue'",
        {"currency_sum", "balance_equals_entries", "last_entry_is_balance"},
    ),
    (
        "UPDATE ledger.entries SET balance_before_cents = balance_before_cents + 5,"
        " balance_after_cents = balance_after_cents + 5 WHERE transfer_id = 'out'",
        {"balance_chain", "last_entry_is_balance"},
    ),
    (
        "DELETE FROM ledger.entries WHERE transfer_id = 'out' AND amount_cents > 0",
        {"balance_equals_entries", "versions_contiguous", "transfer_balanced"},
    ),
    (
        "UPDATE ledger.transfers SET amount_cents = 301 WHERE id = 'out'",
        {"transfer_balanced"},
    ),
    (
        "UPDATE ledger.accounts SET balance_cents = 0, version = version + 1"
        " WHERE type = 'table_escrow'",
        {"versions_contiguous", "closed_escrow_empty"},
    ),
    (
        "UPDATE ledger.settlements SET fee_cents = fee_cents - 1",
        {"settlement_arithmetic", "settlement_transfers"},
    ),
    (
        # (a wallet cannot even be declared negative-capable: a CHECK constraint refuses it)
        "UPDATE ledger.accounts SET may_go_negative = false WHERE type = 'prize_fund'",
        {"type_policy"},
    ),
]


@pytest.mark.ledger_tampering
@pytest.mark.parametrize(("tamper", "checks"), TAMPERING)
async def test_reconciliation_names_each_kind_of_tampering(run, engine, sql, tamper, checks):
    await honest_ledger(run)
    # As a superuser with triggers off: what an attacker with database access could do.
    await sql.execute("SET session_replication_role = replica")
    await sql.execute(tamper)
    report = await reconcile(engine)
    assert not report.ok
    assert {problem.check for problem in report.problems} == checks, report.problems
    assert all(problem.message for problem in report.problems)


@pytest.mark.ledger_tampering
async def test_a_closed_escrow_receiving_a_later_entry_is_reported(run, engine, sql):
    names = await honest_ledger(run)
    await sql.execute("SET session_replication_role = replica")
    await sql.execute("UPDATE ledger.accounts SET closed_version = closed_version - 1"
                      " WHERE owner_id = $1", names["table"])  # fmt: skip
    report = await reconcile(engine)
    assert {problem.check for problem in report.problems} == {
        "closed_escrow_empty",
        "closed_escrow_no_later_entry",
    }
