"""The audit sweep: the scheduler's periodic ledger reconciliation and re-verification of
newly signed rounds, so that operators are alerted (``ops/monitoring/alerts.yml``) the
moment money or a round record stops adding up, not when a player disputes it.

Every ``RAIZ_AUDIT_INTERVAL_S`` (5 minutes by default) each worker's scheduler calls
:meth:`AuditSweep.run`; one of them does the work (a transaction-level advisory lock, and a
sweep younger than half the interval is left alone).  A sweep

* reconciles the ledger (one consistent snapshot): in full, as ``raiz ledger reconcile``,
  when the last full reconciliation is ``RAIZ_AUDIT_FULL_RECONCILE_S`` (a day) old, when the
  previous sweep found a ledger problem (so that it keeps being reported until it is mended)
  or has no mark; otherwise incrementally, only the entries written after the previous
  sweep's mark (``entries_up_to``) and what they touched (``ledger.reconcile`` says check by
  check why that is sound, and how the mark leaves no concurrently committing entry behind);
* re-verifies, with ``raiz audit verify-all``'s verifier, every table with a round signed
  after the previous sweep's ``signed_up_to`` (the whole match: rounds, chain, money), up to
  ``now - RAIZ_AUDIT_SETTLE_S`` so that rounds still committing are left to the next one;
* records itself in ``game.audit_sweeps`` (insert-only) and updates the ``raiz_audit_*`` and
  ``raiz_ledger_reconcile_*`` metrics.

The verification is CPU work: it runs in a thread, one table at a time, so the worker's
event loop keeps serving requests.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import structlog
from prometheus_client import Counter, Gauge, Histogram
from sqlalchemy import func, select, text

from app.compliance.audit import pinned_keys, verify_tables
from app.compliance.models import AuditSweep, RoundSignature
from app.compliance.service import allow_fixed_streams
from app.db.base import transaction_clock
from app.rng_api import RngServices
from app.tables.models import Round
from ledger.reconcile import sweep_reconcile

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings
    from app.db import Database

__all__ = (
    "AUDIT_LAST_SWEEP",
    "AUDIT_ROUNDS_VERIFIED",
    "AUDIT_SWEEP_SECONDS",
    "AUDIT_VERIFICATION_FAILURES",
    "RECONCILE_PROBLEMS",
    "RECONCILE_RUNS",
    "AuditMonitor",
    "SweepReport",
    "count_latest_sweep",
)

AUDIT_LOCK_KEY: Final = 0x7261697A_61756474
"""``pg_try_advisory_xact_lock`` key: one sweep at a time across workers ("raizaudt")."""
MAX_FINDINGS: Final = 50
MARK_WAIT_MS: Final = 10_000
"""How long a sweep waits for the transactions that may hold ledger entry ids below its mark to
end (milliseconds, normally); past it the mark stays where it was (``ledger.reconcile``)."""

logger = structlog.get_logger("raiz.compliance")

AUDIT_ROUNDS_VERIFIED = Counter(
    "raiz_audit_rounds_verified_total",
    "Finished rounds re-verified by the audit sweep (every round of each swept table).",
)
AUDIT_VERIFICATION_FAILURES = Counter(
    "raiz_audit_verification_failures_total",
    "Tables whose re-verification failed in an audit sweep (the first bad round is logged).",
)
AUDIT_LAST_SWEEP = Gauge(
    "raiz_audit_last_sweep_timestamp_seconds",
    "Unix time at which the last audit sweep finished (max over workers).",
    multiprocess_mode="max",
)
AUDIT_SWEEP_SECONDS = Histogram(
    "raiz_audit_sweep_seconds",
    "Duration of audit sweeps (reconciliation and re-verification).",
    buckets=(0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0),
)
RECONCILE_RUNS = Counter(
    "raiz_ledger_reconcile_runs_total",
    "Ledger reconciliations run by the audit sweep, by result (clean, problems).",
    ["result"],
)
RECONCILE_PROBLEMS = Gauge(
    "raiz_ledger_reconcile_problems",
    "Problems found by the latest ledger reconciliation (0 when clean), whichever worker or "
    "instance ran it (read from game.audit_sweeps every 5 s).",
    multiprocess_mode="livemostrecent",
)


async def count_latest_sweep(database: Database) -> None:
    """Refresh ``raiz_ledger_reconcile_problems`` and ``raiz_audit_last_sweep_timestamp_seconds``
    from the latest sweep recorded in the database.

    One worker of one instance sweeps at a time; every worker of every instance reports what
    the latest sweep found, so that an instance whose own last sweep found a problem does not
    keep reporting it after a clean sweep elsewhere (nor a restarted one report no sweep).
    """
    async with database.session() as session:
        latest = (
            await session.execute(
                select(AuditSweep.reconcile_problems, AuditSweep.finished_at)
                .order_by(AuditSweep.id.desc())
                .limit(1)
            )
        ).first()
    if latest is None:
        return
    problems, finished_at = latest
    RECONCILE_PROBLEMS.set(problems)
    AUDIT_LAST_SWEEP.set(finished_at.timestamp())


@dataclass(slots=True)
class SweepReport:
    """What one sweep did (``None`` from :meth:`AuditMonitor.run` when it did not run)."""

    rounds_verified: int = 0
    tables_verified: int = 0
    tables_failed: int = 0
    reconcile_problems: int = 0
    reconcile_kind: str = "full"
    """``full`` or ``incremental``."""
    entries_checked: int = 0
    """Ledger entries the reconciliation checked (incremental: the new ones only)."""
    entries_after: int | None = None
    entries_up_to: int | None = None
    """The ledger mark: the next sweep checks the entries above it."""
    findings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether money and every swept round verified."""
        return self.tables_failed == 0 and self.reconcile_problems == 0


class AuditMonitor:
    """The scheduler's audit sweep (at most one per half interval across workers)."""

    def __init__(self, database: Database, settings: Settings) -> None:
        self._database = database
        self._settings = settings
        self._rng = RngServices.from_settings(settings)
        self._worker = f"{socket.gethostname()}:{os.getpid()}"[:64]

    async def run(self) -> SweepReport | None:
        """Sweep unless another worker is sweeping or swept less than half an interval ago."""
        started = time.perf_counter()
        settings = self._settings
        async with self._database.session() as session:
            await session.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
            # idle while the reconciliation runs on another connection (over a minute on a
            # ledger of a few million entries): the server's idle_in_transaction_session_timeout
            # (60 s, there for stuck clients) must not end the sweep; for this transaction only
            await session.execute(text("SET LOCAL idle_in_transaction_session_timeout = 0"))
            locked = await session.scalar(
                text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": AUDIT_LOCK_KEY}
            )
            if not locked:
                return None
            # the database's clock, as the rounds' signing times: a worker whose clock ran
            # ahead would move the window past rounds signed after it, never verified
            now = await transaction_clock(session)
            last = await session.scalar(select(AuditSweep).order_by(AuditSweep.id.desc()).limit(1))
            half = dt.timedelta(seconds=settings.audit_interval_s / 2)
            if last is not None and last.started_at > now - half:
                return None
            report = SweepReport()
            entries_after = await self._incremental_after(session, last, now)
            ledger = await sweep_reconcile(self._database.engine, entries_after, MARK_WAIT_MS)
            report.reconcile_problems = len(ledger.problems)
            report.reconcile_kind = ledger.kind
            report.entries_checked = ledger.entries
            report.entries_after = ledger.entries_after
            report.entries_up_to = ledger.entries_up_to
            report.findings.extend(
                {"check": f"ledger:{problem.check}", "message": problem.message}
                for problem in ledger.problems[:MAX_FINDINGS]
            )
            signed_after = None if last is None else last.signed_up_to
            signed_up_to = now - dt.timedelta(seconds=settings.audit_settle_s)
            if signed_after is not None and signed_up_to < signed_after:
                signed_up_to = signed_after
            query = (
                select(Round.table_id)
                .join(RoundSignature, RoundSignature.round_id == Round.id)
                .where(RoundSignature.signed_at <= signed_up_to)
                .group_by(Round.table_id)
                .order_by(Round.table_id)
            )
            if signed_after is not None:
                query = query.where(RoundSignature.signed_at > signed_after)
            table_ids = list((await session.scalars(query)).all())
            async for bundle, outcome, _ in verify_tables(
                session,
                self._rng.for_session(session),
                table_ids,
                await pinned_keys(session),
                allow_fixed=allow_fixed_streams(settings),
                in_thread=True,
            ):
                report.tables_verified += 1
                report.rounds_verified += len(bundle["rounds"])
                if outcome.failure is not None:
                    report.tables_failed += 1
                    finding = {
                        "check": outcome.failure.check,
                        "table_id": outcome.table_id,
                        "round_id": outcome.failed_round,
                        "message": str(outcome.failure),
                    }
                    if len(report.findings) < 2 * MAX_FINDINGS:
                        report.findings.append(finding)
                    logger.error("audit_verification_failed", **finding)
            session.add(
                AuditSweep(
                    started_at=now,
                    finished_at=func.clock_timestamp(),
                    worker=self._worker,
                    signed_after=signed_after,
                    signed_up_to=signed_up_to,
                    rounds_verified=report.rounds_verified,
                    tables_failed=report.tables_failed,
                    reconcile_problems=report.reconcile_problems,
                    findings=report.findings,
                    reconcile_kind=report.reconcile_kind,
                    entries_after=report.entries_after,
                    entries_up_to=report.entries_up_to,
                    entries_checked=report.entries_checked,
                )
            )
            await session.commit()
        AUDIT_ROUNDS_VERIFIED.inc(report.rounds_verified)
        AUDIT_VERIFICATION_FAILURES.inc(report.tables_failed)
        RECONCILE_RUNS.labels("clean" if report.reconcile_problems == 0 else "problems").inc()
        RECONCILE_PROBLEMS.set(report.reconcile_problems)
        AUDIT_LAST_SWEEP.set(time.time())
        elapsed = time.perf_counter() - started
        AUDIT_SWEEP_SECONDS.observe(elapsed)
        log = logger.info if report.ok else logger.error
        log(
            "audit_sweep",
            rounds=report.rounds_verified,
            tables=report.tables_verified,
            tables_failed=report.tables_failed,
            reconcile_problems=report.reconcile_problems,
            reconcile=report.reconcile_kind,
            entries_checked=report.entries_checked,
            entries_up_to=report.entries_up_to,
            seconds=round(elapsed, 3),
        )
        return report

    async def _incremental_after(
        self, session: AsyncSession, last: AuditSweep | None, now: dt.datetime
    ) -> int | None:
        """The mark the reconciliation starts after, or None for a full one."""
        if last is None or last.entries_up_to is None or last.reconcile_problems > 0:
            return None
        full_started = await session.scalar(
            select(AuditSweep.started_at)
            .where(AuditSweep.reconcile_kind == "full")
            .order_by(AuditSweep.id.desc())
            .limit(1)
        )
        every = dt.timedelta(seconds=self._settings.audit_full_reconcile_s)
        if full_started is None or full_started <= now - every:
            return None
        return last.entries_up_to
