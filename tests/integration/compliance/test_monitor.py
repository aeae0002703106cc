"""The audit sweep: reconciles the ledger, re-verifies each newly signed round once, records
itself (insert-only), feeds the alerting metrics, and reports tampering."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import pytest
from prometheus_client import REGISTRY

from app.compliance.monitor import AuditMonitor
from app.db import Database
from tests.conftest import make_settings
from tests.integration.compliance.helpers import play_match, raw

pytestmark = pytest.mark.asyncio


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def rounds_signed(url: str, table_id: str) -> int:
    connection = await asyncpg.connect(url)
    try:
        return int(
            await connection.fetchval(
                "SELECT count(*) FROM game.round_signatures s "
                "JOIN game.rounds r ON r.id = s.round_id WHERE r.table_id = $1",
                table_id,
            )
        )
    finally:
        await connection.close()


async def test_a_sweep_verifies_new_rounds_once_and_is_recorded(client, settings):
    match = await play_match(client, settings)
    url = settings.database_url
    signed = await rounds_signed(url, match["table_id"])
    assert signed >= 1
    sweep_settings = make_settings(url, audit_settle_s=0, audit_interval_s=600)
    database = Database.connect(url, sweep_settings)
    monitor = AuditMonitor(database, sweep_settings)
    eager = AuditMonitor(database, make_settings(url, audit_settle_s=0, audit_interval_s=1e-3))
    verified_before = sample("raiz_audit_rounds_verified_total")
    clean_before = sample("raiz_ledger_reconcile_runs_total", result="clean")
    try:
        first = await monitor.run()
        assert first is not None and first.ok, first
        assert (first.tables_verified, first.rounds_verified) == (1, signed)
        assert sample("raiz_audit_rounds_verified_total") == verified_before + signed
        assert sample("raiz_ledger_reconcile_runs_total", result="clean") == clean_before + 1
        assert sample("raiz_ledger_reconcile_problems") == 0
        assert sample("raiz_audit_last_sweep_timestamp_seconds") > 0
        # Within half an interval of the last sweep (any worker's), nothing runs.
        assert await monitor.run() is None
        # The next sweep starts where the last one stopped: nothing new was signed.
        second = await eager.run()
        assert second is not None and second.ok
        assert second.rounds_verified == 0
    finally:
        await database.dispose()
    connection = await asyncpg.connect(url)
    try:
        rows = await connection.fetch(
            "SELECT rounds_verified, tables_failed, reconcile_problems, signed_after "
            "FROM game.audit_sweeps ORDER BY id"
        )
        assert [tuple(row.values())[:3] for row in rows] == [(signed, 0, 0), (0, 0, 0)]
        assert rows[0]["signed_after"] is None and rows[1]["signed_after"] is not None
        with pytest.raises(asyncpg.RaiseError, match="append-only"):
            await connection.execute("UPDATE game.audit_sweeps SET tables_failed = 0")
        with pytest.raises(asyncpg.RaiseError, match="append-only"):
            await connection.execute("DELETE FROM game.audit_sweeps")
    finally:
        await connection.close()


async def test_a_sweep_reports_a_changed_payout_in_the_ledger_and_the_round(client, settings):
    match = await play_match(client, settings)
    url = settings.database_url
    transfer = f"settle:{match['table_id']}/payout/0"
    update = "UPDATE ledger.transfers SET amount_cents = amount_cents + $2 WHERE id = $1"
    sweep_settings = make_settings(url, audit_settle_s=0)
    database = Database.connect(url, sweep_settings)
    failures_before = sample("raiz_audit_verification_failures_total")
    problems_before = sample("raiz_ledger_reconcile_runs_total", result="problems")
    async with raw(url) as connection:
        await connection.execute(update, transfer, -100)
    try:
        report = await AuditMonitor(database, sweep_settings).run()
        assert report is not None and not report.ok
        assert report.tables_failed == 1
        assert report.reconcile_problems >= 1
        assert {finding["check"] for finding in report.findings} >= {"money"}
        assert any(finding["check"].startswith("ledger:") for finding in report.findings)
        assert sample("raiz_audit_verification_failures_total") == failures_before + 1
        assert sample("raiz_ledger_reconcile_runs_total", result="problems") == problems_before + 1
        assert sample("raiz_ledger_reconcile_problems") == report.reconcile_problems
    finally:
        async with raw(url) as connection:
            await connection.execute(update, transfer, 100)
        await database.dispose()


async def test_a_sweep_on_a_worker_whose_clock_runs_ahead_misses_no_round(
    client, settings, monkeypatch
):
    # A sweep on a worker an hour ahead, then a match signed, then a sweep on another
    # worker: the second verifies the new match's rounds.  With the worker's clock, the first
    # sweep's window would have reached an hour into the future, and the rounds signed
    # within that hour would be left out of every later sweep (their signing time is before
    # where the next window starts).
    import datetime as dt

    from tests.helpers import worker_clock_off

    first_match = await play_match(client, settings, players=2, lives=1, names="early")
    url = settings.database_url
    eager = make_settings(url, audit_settle_s=0, audit_interval_s=1e-3)
    database = Database.connect(url, eager)
    try:
        worker_clock_off(monkeypatch, dt.timedelta(hours=1))
        first = await AuditMonitor(database, eager).run()
        assert first is not None and first.ok, first
        assert first.rounds_verified == await rounds_signed(url, first_match["table_id"])
        monkeypatch.undo()
        second_match = await play_match(
            client,
            settings,
            players=2,
            lives=1,
            names="later",
            operator_token=first_match["operator"],
        )
        second = await AuditMonitor(database, eager).run()
        assert second is not None and second.ok, second
        assert second.rounds_verified == await rounds_signed(url, second_match["table_id"]) > 0
    finally:
        await database.dispose()


async def test_every_worker_reports_the_latest_sweep_whoever_ran_it(client, settings):
    # This worker's own last sweep found problems; then another instance's worker swept
    # clean.  The alert (max over instances) must clear: every worker reports the latest
    # sweep of the database, refreshed with the other database counts (every 5 s).
    import asyncio
    import time

    from app.compliance.monitor import RECONCILE_PROBLEMS

    RECONCILE_PROBLEMS.set(3)
    connection = await asyncpg.connect(settings.database_url)
    try:
        await connection.execute(
            "INSERT INTO game.audit_sweeps (started_at, finished_at, worker, signed_up_to,"
            " rounds_verified, tables_failed, reconcile_problems, findings)"
            " VALUES (now(), now(), 'other-host:1', now(), 0, 0, 0, '[]')"
        )
    finally:
        await connection.close()
    deadline = time.monotonic() + 15
    while sample("raiz_ledger_reconcile_problems") != 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert sample("raiz_ledger_reconcile_problems") == 0
    assert abs(sample("raiz_audit_last_sweep_timestamp_seconds") - time.time()) < 30


@pytest.mark.ledger_tampering
async def test_sweeps_reconcile_incrementally_and_the_daily_full_run_catches_old_tampering(
    client, settings
):
    match = await play_match(client, settings)
    url = settings.database_url
    eager = make_settings(url, **_EAGER)
    database = Database.connect(url, eager)
    monitor = AuditMonitor(database, eager)
    daily_due = AuditMonitor(
        database, make_settings(url, **{**_EAGER, "audit_full_reconcile_s": 0})
    )
    try:
        async with raw(url) as connection:
            total = int(await connection.fetchval("SELECT count(*) FROM ledger.entries"))
            top = int(await connection.fetchval("SELECT max(id) FROM ledger.entries"))
        # the first sweep (no mark yet) reconciles in full and sets the mark
        first = await monitor.run()
        assert first is not None and first.ok, first
        assert (first.reconcile_kind, first.entries_checked) == ("full", total)
        assert first.entries_up_to == top
        # the next ones check only what was written since: nothing, then one deposit
        second = await monitor.run()
        assert second is not None and second.ok, second
        assert (second.reconcile_kind, second.entries_checked) == ("incremental", 0)
        assert second.entries_after == top
        await database_deposit(url, match)
        third = await monitor.run()
        assert third is not None and third.ok, third
        assert (third.reconcile_kind, third.entries_checked) == ("incremental", 2)
        assert third.entries_up_to == top + 2
        # an old entry changed by the tables' owner: not the incremental sweep's to see...
        async with raw(url) as connection:
            await connection.execute(
                "UPDATE ledger.entries SET amount_cents = amount_cents + 1,"
                " balance_after_cents = balance_after_cents + 1 WHERE id = $1",
                top,
            )
        blind = await monitor.run()
        assert blind is not None and blind.ok and blind.reconcile_kind == "incremental"
        # ...but the daily full run's, and the sweeps after it stay full while it stands
        daily = await daily_due.run()
        assert daily is not None and daily.reconcile_kind == "full"
        assert {f["check"] for f in daily.findings} >= {"ledger:transfer_balanced"}
        still = await monitor.run()
        assert still is not None and still.reconcile_kind == "full"
        assert still.reconcile_problems == daily.reconcile_problems > 0
    finally:
        await database.dispose()
    async with raw(url) as connection:
        rows = await connection.fetch(
            "SELECT reconcile_kind, entries_after, entries_up_to, entries_checked,"
            " reconcile_problems > 0 FROM game.audit_sweeps ORDER BY id"
        )
    assert [tuple(row.values()) for row in rows] == [
        ("full", None, top, total, False),
        ("incremental", top, top, 0, False),
        ("incremental", top, top + 2, 2, False),
        ("incremental", top + 2, top + 2, 0, False),
        ("full", None, top + 2, total + 2, True),
        ("full", None, top + 2, total + 2, True),
    ]


_EAGER = {"audit_settle_s": 0, "audit_interval_s": 1e-3}


async def database_deposit(url: str, match: dict[str, Any]) -> None:
    """One deposit through the ledger, as the wallet API writes it (two entries)."""
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

    from app.db.engine import async_url
    from ledger import Ledger

    engine = create_async_engine(async_url(url))
    try:
        async with async_sessionmaker(engine)() as session, session.begin():
            await Ledger(session).deposit(f"dep:sweep:{match['table_id']}", uuid.uuid4(), 700)
    finally:
        await engine.dispose()
