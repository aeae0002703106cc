"""The audit sweep under the production server's ``idle_in_transaction_session_timeout`` (60 s,
ops/deploy/postgresql.conf): its transaction (the advisory lock, the snapshot the rounds are
verified in) waits while the reconciliation runs on another connection, and the
reconciliation of a ledger kept years takes longer than that (73 s with 3.8 million entries)."""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import asyncpg
import pytest

from app.compliance.monitor import AuditMonitor
from app.db import Database
from tests.conftest import make_settings

pytestmark = pytest.mark.asyncio

IDLE_TIMEOUT_MS = 900
"""The server's timeout, in miniature: shorter than the slowed reconciliation (1 s), so a
sweep transaction left idle across it is ended; as long as that allows, so that the sweep's
other transactions (the reconciliation's snapshot, with Python work between its statements)
keep a loaded machine's pauses (300 ms left them little)."""

MONITOR = importlib.import_module("app.compliance.monitor")


async def test_a_sweep_outlives_the_idle_in_transaction_timeout(database_url, monkeypatch):
    connection = await asyncpg.connect(database_url)
    try:
        name = await connection.fetchval("SELECT current_database()")
        await connection.execute(
            f'ALTER DATABASE "{name}" SET idle_in_transaction_session_timeout = {IDLE_TIMEOUT_MS}'
        )
    finally:
        await connection.close()
    real = MONITOR.sweep_reconcile

    async def slow_reconcile(engine: Any, *args: Any) -> Any:
        await asyncio.sleep(1.0)  # a long ledger, in miniature
        return await real(engine, *args)

    monkeypatch.setattr(MONITOR, "sweep_reconcile", slow_reconcile)
    settings = make_settings(database_url, audit_settle_s=0)
    database = Database.connect(database_url, settings)
    try:
        report = await AuditMonitor(database, settings).run()
        connection = await asyncpg.connect(database_url)
        try:
            sweeps = await connection.fetchval("SELECT count(*) FROM game.audit_sweeps")
            # the fixture's own reconciliation at teardown must not run under the timeout (on a
            # loaded machine a pause between its statements ended its connection)
            await connection.execute(
                f'ALTER DATABASE "{name}" RESET idle_in_transaction_session_timeout'
            )
        finally:
            await connection.close()
    finally:
        await database.dispose()
    assert report is not None and report.ok
    assert sweeps == 1
