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
        # a balance that moves with its version but without an entry (checked at commit)
        "UPDATE ledger.accounts SET balance_cents = balance_cents + 100, version = version + 1"
        " WHERE type = 'cash_out'",
        "UPDATE ledger.accounts SET balance_cents = balance_cents - 1, version = version + 1"
        " WHERE type = 'player_wallet'",
        # ... or a version that moves alone
        "UPDATE ledger.accounts SET version = version + 2 WHERE type = 'cash_out'",
        # an account created with money in it
        "INSERT INTO ledger.accounts (id, type, currency, may_go_negative, balance_cents)"
        " VALUES (gen_random_uuid(), 'player_wallet', 'BRL', false, 500)",
        "INSERT INTO ledger.accounts (id, type, currency, may_go_negative, version)"
        " VALUES (gen_random_uuid(), 'player_wallet', 'BRL', false, 1)",
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


async def refunded_entry(run, names: dict[str, uuid.UUID]) -> None:
    """Ana and Bia sit at a second table; Ana leaves and gets her entry back."""
    other = uuid.uuid4()
    for player in ("ana", "bia"):
        await run(lambda ledger, p=names[player]: ledger.deposit(f"dep2:{p}", p, 500))
        await run(lambda ledger, p=names[player]: ledger.take_entry(f"e2:{p}", p, other, 500))
    await run(lambda ledger: ledger.refund_entry("r2:ana", f"e2:{names['ana']}"))


WALLET_OF = "(SELECT id FROM ledger.accounts WHERE type = 'player_wallet' AND owner_id = '{}')"


@pytest.mark.ledger_tampering
async def test_a_payout_credited_to_another_wallet_than_the_winners_is_reported(run, engine, sql):
    """Moved consistently (entries, versions, balances), every sum still adds up: only the
    settlement's winners say whose money it was."""
    names = await honest_ledger(run)
    ana, bia = WALLET_OF.format(names["ana"]), WALLET_OF.format(names["bia"])
    await sql.execute("SET session_replication_role = replica")
    for statement in (
        f"UPDATE ledger.transfers SET credit_account_id = {bia} WHERE id = 'settle/payout/0'",
        f"UPDATE ledger.entries SET account_id = {bia}, account_version = 3,"
        " balance_before_cents = 500, balance_after_cents = 1400"
        " WHERE transfer_id = 'settle/payout/0' AND amount_cents > 0",
        "UPDATE ledger.entries SET account_version = 3, balance_before_cents = 500,"
        " balance_after_cents = 200 WHERE transfer_id = 'out'  AND amount_cents < 0",
        f"UPDATE ledger.accounts SET balance_cents = 200, version = 3 WHERE id = {ana}",
        f"UPDATE ledger.accounts SET balance_cents = 1400, version = 3 WHERE id = {bia}",
    ):
        await sql.execute(statement)
    report = await reconcile(engine)
    assert {problem.check for problem in report.problems} == {"settlement_accounts"}, report


@pytest.mark.ledger_tampering
async def test_a_transfer_between_accounts_its_kind_does_not_allow_is_reported(run, engine, sql):
    await honest_ledger(run)
    await sql.execute("SET session_replication_role = replica")
    await sql.execute("UPDATE ledger.transfers SET kind = 'payout' WHERE id = 'out'")
    report = await reconcile(engine)
    assert {problem.check for problem in report.problems} == {"transfer_route"}, report


@pytest.mark.ledger_tampering
async def test_a_refund_that_does_not_mirror_its_entry_is_reported(run, engine, sql):
    """Ana's refund relabelled as Bia's: Bia's entry looks refunded but she never got it."""
    names = await honest_ledger(run)
    await refunded_entry(run, names)
    await sql.execute("SET session_replication_role = replica")
    await sql.execute(
        f"UPDATE ledger.transfers SET reverses_id = 'e2:{names['bia']}' WHERE id = 'r2:ana'"
    )
    report = await reconcile(engine)
    assert {problem.check for problem in report.problems} == {"reversal_mirrors"}, report


async def test_reconciliation_is_clean_with_refunds_and_reversals(run, engine):
    names = await honest_ledger(run)
    await refunded_entry(run, names)
    await run(lambda ledger: ledger.reverse("undo-dep2", f"dep2:{names['bia']}"))
    report = await reconcile(engine)
    assert report.ok, report.problems


async def test_an_account_moves_only_with_the_entries_of_its_transaction(run, sql):
    """The entries-behind-a-move check runs at commit: a transaction that writes a balanced
    transfer's entries by hand, and moves the accounts to match, commits (what a posting
    does); the same move without the entries, or to another balance, does not."""
    names = await honest_ledger(run)
    wallet = await sql.fetchrow(
        "SELECT id, balance_cents, version FROM ledger.accounts"
        " WHERE type = 'player_wallet' AND owner_id = $1",
        names["bia"],
    )
    cash_in = await sql.fetchrow(
        "SELECT id, balance_cents, version FROM ledger.accounts WHERE type = 'cash_in'"
    )

    async def move(to_wallet_balance: int) -> None:
        async with sql.transaction():
            # accounts first, entries after: the check waits for the commit
            for account, after in (
                (cash_in, cash_in["balance_cents"] - 7),
                (wallet, to_wallet_balance),
            ):
                await sql.execute(
                    "UPDATE ledger.accounts SET balance_cents = $2, version = version + 1"
                    " WHERE id = $1",
                    account["id"],
                    after,
                )
            await sql.execute(
                "INSERT INTO ledger.transfers (id, batch_id, batch_position, debit_account_id,"
                " credit_account_id, amount_cents, currency, kind, reference, metadata,"
                " request_sha256) VALUES ('by-hand', gen_random_uuid(), 0, $1, $2, 7, 'BRL',"
                " 'deposit', '{}', '{}', sha256('x'::bytea))",
                cash_in["id"],
                wallet["id"],
            )
            for account, amount in ((cash_in, -7), (wallet, 7)):
                await sql.execute(
                    "INSERT INTO ledger.entries (transfer_id, account_id, amount_cents,"
                    " balance_before_cents, balance_after_cents, account_version)"
                    " VALUES ('by-hand', $1, $2::bigint, $3::bigint, $3::bigint + $2::bigint, $4)",
                    account["id"],
                    amount,
                    account["balance_cents"],
                    account["version"] + 1,
                )

    before = await run.snapshot()
    with pytest.raises(asyncpg.RaiseError, match="without its entries"):
        await move(wallet["balance_cents"] + 8)  # the entry ends at +7
    assert await run.snapshot() == before
    await move(wallet["balance_cents"] + 7)
    assert (
        await sql.fetchval("SELECT balance_cents FROM ledger.accounts WHERE id = $1", wallet["id"])
        == wallet["balance_cents"] + 7
    )
