"""Each condition of each reconciliation check, broken alone (as far as the database's own
constraints allow), is reported by name, by the full run and by the incremental one.

A check that ORs several conditions is only tested when each condition is the one that
fires: a tampering caught by a sibling condition proves nothing about the others."""

from __future__ import annotations

import importlib

import pytest

from ledger import reconcile
from ledger.reconcile import sweep_reconcile
from tests.integration.ledger.test_immutability_and_reconcile import (
    WALLET_OF,
    honest_ledger,
    refunded_entry,
)

pytestmark = [pytest.mark.asyncio, pytest.mark.ledger_tampering]

ESCROW_OF = "(SELECT id FROM ledger.accounts WHERE type = 'table_escrow' AND owner_id = '{}')"
OTHER_ESCROW = "(SELECT debit_account_id FROM ledger.transfers WHERE id = 'r2:ana')"
CASH_OUT = "(SELECT id FROM ledger.accounts WHERE type = 'cash_out')"

# (what, statements, checks of the full run, checks of the incremental run)
# The ledger: Ana and Bia deposit 1,000, pay 500 at a table that pays Ana 900 (fee 100) and
# is closed; Ana withdraws 300 ('out'); both pay 500 at a second table, Ana is refunded.
# Ana's wallet: dep v1, entry v2, payout v3, out v4, dep2 v5, e2 v6, r2 v7.
CASES = [
    (
        "a transfer recorded in another currency than its accounts'",
        ["UPDATE ledger.transfers SET currency = 'USD' WHERE id = 'out'"],
        {"transfer_currency"},
        {"transfer_currency"},
    ),
    (
        # (a CHECK constraint refuses it: dropped first, as the tables' owner could)
        "a wallet below zero",
        [
            "ALTER TABLE ledger.accounts DROP CONSTRAINT ck_accounts_balance_not_negative",
            "UPDATE ledger.accounts SET balance_cents = -1 WHERE id = {bia}",
        ],
        {"currency_sum", "balance_equals_entries", "last_entry_is_balance", "never_negative"},
        {"currency_sum", "last_entry_is_balance", "never_negative"},
    ),
    (
        # versions 1, 3..7 at version 7: only the count of entries is wrong
        "an entry removed from the middle of a wallet's history",
        ["DELETE FROM ledger.entries WHERE transfer_id = 'entry:{ana_id}' AND amount_cents < 0"],
        {"balance_equals_entries", "versions_contiguous", "balance_chain", "transfer_balanced"},
        {"versions_contiguous", "transfer_balanced"},
    ),
    (
        # versions 0, 2..4 at version 4 (a CHECK constraint refuses version 0: dropped first)
        "a wallet's history renumbered from 0",
        [
            "ALTER TABLE ledger.entries DROP CONSTRAINT ck_entries_account_version",
            "UPDATE ledger.entries SET account_version = 0"
            " WHERE account_id = {bia} AND account_version = 1",
        ],
        {"versions_contiguous"},
        {"versions_contiguous"},
    ),
    (
        # a third and a fourth entry summing to zero, off the transfer's own accounts: only
        # the number of entries is wrong
        "a transfer with two more entries than its two legs",
        [
            "INSERT INTO ledger.entries (transfer_id, account_id, amount_cents,"
            " balance_before_cents, balance_after_cents, account_version)"
            " VALUES ('out', {bia}, 7, 500, 507, 5), ('out', {cash_in}, -7, -3000, -3007, 5)"
        ],
        {"balance_equals_entries", "versions_contiguous", "transfer_balanced"},
        {"versions_contiguous", "transfer_balanced"},
    ),
    (
        # two entries summing to zero, the credit one right: only the debit leg is wrong
        "a transfer's debit entry written on another account",
        [
            "UPDATE ledger.entries SET account_id = {bia}, account_version = 5"
            " WHERE transfer_id = 'out' AND amount_cents < 0"
        ],
        {"balance_equals_entries", "versions_contiguous", "balance_chain", "transfer_balanced"},
        {"versions_contiguous", "balance_chain", "transfer_balanced"},
    ),
    (
        "a refund of another amount than its entry",
        ["UPDATE ledger.transfers SET amount_cents = 499 WHERE id = 'r2:ana'"],
        {"transfer_balanced", "reversal_mirrors"},
        {"transfer_balanced", "reversal_mirrors"},
    ),
    (
        "a refund of a transfer that is not an entry fee",
        ["UPDATE ledger.transfers SET kind = 'adjustment' WHERE id = 'e2:{ana_id}'"],
        {"reversal_mirrors"},
        {"reversal_mirrors"},
    ),
    (
        "a closed escrow holding money at the version it was closed at",
        ["UPDATE ledger.accounts SET balance_cents = 5 WHERE id = {escrow}"],
        {"currency_sum", "balance_equals_entries", "last_entry_is_balance", "closed_escrow_empty"},
        {"currency_sum", "last_entry_is_balance", "closed_escrow_empty"},
    ),
    (
        "a closed escrow moved after it was closed",
        ["UPDATE ledger.accounts SET closed_version = closed_version - 1 WHERE id = {escrow}"],
        {"closed_escrow_empty", "closed_escrow_no_later_entry"},
        {"closed_escrow_empty", "closed_escrow_no_later_entry"},
    ),
    (
        # fee + payouts still equal the pool: only the fee's rounding is wrong
        "a settlement recording one centavo less fee and one more payout",
        ["UPDATE ledger.settlements SET fee_cents = fee_cents - 1, payouts = '[901]'"],
        {"settlement_arithmetic", "settlement_transfers"},
        {"settlement_arithmetic", "settlement_transfers"},
    ),
    (
        "a settlement recording payouts that exceed its pool",
        ["UPDATE ledger.settlements SET payouts = '[901]'"],
        {"settlement_arithmetic", "settlement_transfers"},
        {"settlement_arithmetic", "settlement_transfers"},
    ),
    (
        "a settlement recording a payout for nobody",
        ["UPDATE ledger.settlements SET payouts = '[900, 0]'"],
        {"settlement_arithmetic"},
        {"settlement_arithmetic"},
    ),
    (
        "a payout recorded as paid from another table's escrow",
        [
            f"UPDATE ledger.transfers SET debit_account_id = {OTHER_ESCROW}"
            " WHERE id = 'settle/payout/0'"
        ],
        {"transfer_balanced", "settlement_transfers"},
        {"transfer_balanced", "settlement_transfers"},
    ),
    (
        # an account with no owner, like the house's: only its type is wrong
        "a fee recorded as credited to the cash-out account",
        [f"UPDATE ledger.transfers SET credit_account_id = {CASH_OUT} WHERE id = 'settle/fee'"],
        {"transfer_balanced", "transfer_route", "settlement_accounts"},
        {"transfer_balanced", "transfer_route", "settlement_accounts"},
    ),
    (
        "an account's first entry starting from money it never had",
        [
            "UPDATE ledger.entries SET balance_before_cents = 5, balance_after_cents = 305"
            " WHERE transfer_id = 'out' AND amount_cents > 0",
            f"UPDATE ledger.accounts SET balance_cents = 305 WHERE id = {CASH_OUT}",
        ],
        {"currency_sum", "balance_equals_entries", "balance_chain"},
        {"currency_sum", "balance_chain"},
    ),
    (
        "an entry starting from another balance than its predecessor ended at",
        [
            "UPDATE ledger.entries SET balance_before_cents = balance_before_cents + 5,"
            " balance_after_cents = balance_after_cents + 5"
            " WHERE transfer_id = 'out' AND amount_cents < 0"
        ],
        {"balance_chain"},
        {"balance_chain"},
    ),
    (
        "an account's version moved without an entry",
        [f"UPDATE ledger.accounts SET version = version + 1 WHERE id = {CASH_OUT}"],
        {"versions_contiguous"},
        {"versions_contiguous"},
    ),
]


@pytest.mark.parametrize(
    ("statements", "full", "incremental"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
async def test_each_rule_broken_alone_is_reported_by_name(
    run, engine, sql, statements, full, incremental
):
    names = await honest_ledger(run)
    await refunded_entry(run, names)
    assert (await reconcile(engine)).ok
    values = {
        "ana": WALLET_OF.format(names["ana"]),
        "bia": WALLET_OF.format(names["bia"]),
        "ana_id": names["ana"],
        "escrow": ESCROW_OF.format(names["table"]),
        "cash_in": "(SELECT id FROM ledger.accounts WHERE type = 'cash_in')",
    }
    await sql.execute("SET session_replication_role = replica")
    for statement in statements:
        await sql.execute(statement.format(**values))
    whole = await reconcile(engine)
    assert {problem.check for problem in whole.problems} == full, whole.problems
    # every entry is new to a sweep whose previous mark is 0
    since = await sweep_reconcile(engine, 0, 5_000)
    assert since.kind == "incremental"
    assert {problem.check for problem in since.problems} == incremental, since.problems


async def test_an_incremental_sweep_checks_every_new_entry_and_every_account(
    run, engine, sql, monkeypatch
):
    """Windows of new entries follow each other with no entry left between two of them, and
    the checks of account rows still cover the accounts no new entry touched."""
    names = await honest_ledger(run)
    mark = (await sweep_reconcile(engine, None, 5_000)).entries_up_to
    for number in range(3):
        await run(lambda ledger, n=number: ledger.deposit(f"late:{n}", names["bia"], 10))
    monkeypatch.setattr(importlib.import_module("ledger.reconcile"), "CHUNK_KEYS", 2)
    clean = await sweep_reconcile(engine, mark, 5_000)
    assert clean.ok and clean.entries == 6, clean
    await sql.execute("SET session_replication_role = replica")
    # the closed escrow, untouched since the mark, holds money again
    escrow = ESCROW_OF.format(names["table"])
    await sql.execute(f"UPDATE ledger.accounts SET balance_cents = 5 WHERE id = {escrow}")
    # and one new entry per window is wrong by one centavo
    await sql.execute(
        "UPDATE ledger.entries SET amount_cents = amount_cents + 1,"
        " balance_after_cents = balance_after_cents + 1"
        " WHERE transfer_id LIKE 'late:%' AND amount_cents < 0"
    )
    report = await sweep_reconcile(engine, mark, 5_000)
    assert {problem.check for problem in report.problems} == {
        "currency_sum",
        "closed_escrow_empty",
        "balance_chain",
        "last_entry_is_balance",
        "transfer_balanced",
    }, report.problems
    assert sum(p.check == "transfer_balanced" for p in report.problems) == 3, report.problems
