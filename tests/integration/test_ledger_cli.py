"""``raiz ledger reconcile``: a one-line summary and exit 0, or each problem and exit 1."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from app.cli import main
from app.db import Database
from ledger import Ledger


def _some_money(database_url: str, settings) -> None:
    async def work() -> None:
        database = Database.connect(database_url, settings)
        try:
            async with database.session() as session, session.begin():
                player, table = uuid.uuid4(), uuid.uuid4()
                ledger = Ledger(session)
                await ledger.deposit("dep", player, 1_000)
                await ledger.take_entry("entry", player, table, 500)
                await ledger.settle_table("settle", table, 1_000, [player])
                await ledger.close_escrow(table)
        finally:
            await database.dispose()

    asyncio.run(work())


def test_reconcile_prints_a_summary_and_exits_zero_on_a_clean_ledger(cli, database_url, settings):
    _some_money(database_url, settings)
    result = cli.invoke(main, ["ledger", "reconcile"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == ("ledger reconcile: ok: 6 accounts, 4 transfers, 8 entries")


@pytest.mark.ledger_tampering
def test_reconcile_lists_each_problem_and_exits_one(cli, database_url, settings):
    _some_money(database_url, settings)

    async def tamper() -> None:
        connection = await asyncpg.connect(database_url)
        try:
            await connection.execute("SET session_replication_role = replica")
            await connection.execute(
                "UPDATE ledger.accounts SET balance_cents = balance_cents + 50"
                " WHERE type = 'player_wallet'"
            )
        finally:
            await connection.close()

    asyncio.run(tamper())
    result = cli.invoke(main, ["ledger", "reconcile"])
    assert result.exit_code == 1
    assert "currency_sum: balances in BRL sum to 50, not 0" in result.output
    assert "balance_equals_entries: account " in result.output
    assert "ledger reconcile: 3 problem(s)" in result.output
