"""Every Prometheus metric the service exports, defined once, documented in ops/.

HTTP request metrics (``raiz_http_*``) come from Litestar's Prometheus middleware
(:class:`app.api.middleware.HttpMetricsMiddleware`, which tells load shedding from server
errors); this module holds the domain metrics and the database pool gauges.  In multi-process
mode (``PROMETHEUS_MULTIPROC_DIR`` set) gauges aggregate across live workers.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from prometheus_client import Gauge, multiprocess
from sqlalchemy import event, func, select
from sqlalchemy.orm import Session, SessionTransaction

from app.db import base

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

    from app.db import Database

__all__ = (
    "CLOCK_SKEW",
    "DB_POOL_CAPACITY",
    "DB_POOL_CHECKED_OUT",
    "DB_POOL_OVERFLOW",
    "DB_POOL_SIZE",
    "HTTP_LATENCY_BUCKETS_S",
    "count_on_commit",
    "forget_dead_workers",
    "forget_this_worker",
    "measure_clock_skew",
    "update_pool_gauges",
)


class _Incrementable(Protocol):
    def inc(self, amount: float = 1) -> None: ...


_PENDING_KEY = "raiz_pending_counts"


def count_on_commit(session: AsyncSession, counter: _Incrementable, amount: float = 1) -> None:
    """Add ``amount`` to ``counter`` when the transaction of ``session`` commits.

    What a transaction did (a seat paid, a round finished, a prize paid) is counted only if
    it happened: a transaction rolled back -- a refused request, a failing timer that will
    be retried -- counts nothing.  (The ledger counts its transfers the same way.)
    """
    pending: list[tuple[_Incrementable, float]] = session.info.setdefault(_PENDING_KEY, [])
    pending.append((counter, amount))


@event.listens_for(Session, "after_commit")
def _count_committed(session: Session) -> None:
    for counter, amount in session.info.pop(_PENDING_KEY, []):
        counter.inc(amount)


@event.listens_for(Session, "after_transaction_end")
def _forget_rolled_back(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:  # the outermost transaction ended; savepoints change nothing
        session.info.pop(_PENDING_KEY, None)


HTTP_LATENCY_BUCKETS_S = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
"""Histogram buckets for request and action latency, in seconds."""

DB_POOL_SIZE = Gauge(
    "raiz_db_pool_size",
    "Connections the pool keeps open (configured size), summed over workers.",
    multiprocess_mode="livesum",
)
DB_POOL_CHECKED_OUT = Gauge(
    "raiz_db_pool_checked_out",
    "Connections currently lent to requests or jobs, summed over workers.",
    multiprocess_mode="livesum",
)
DB_POOL_OVERFLOW = Gauge(
    "raiz_db_pool_overflow",
    "Connections opened beyond the pool size, summed over workers.",
    multiprocess_mode="livesum",
)
DB_POOL_CAPACITY = Gauge(
    "raiz_db_pool_capacity",
    "Most connections the pool may open (size + max overflow), summed over workers.",
    multiprocess_mode="livesum",
)


CLOCK_SKEW = Gauge(
    "raiz_clock_skew_seconds",
    "This host's clock minus the database server's (positive: the host is ahead), measured "
    "every 5 s at the middle of a round trip.",
    multiprocess_mode="livemostrecent",
)


async def measure_clock_skew(database: Database) -> float:
    """Set and return :data:`CLOCK_SKEW`: the host's clock against the database server's
    (``clock_timestamp()``), give or take half a round trip.  Every decision about time is
    taken on the database's clock; the host's still dates the logs, times the APScheduler
    wake-ups and judges the payment webhook's signature age (docs/operations.md, Clocks)."""
    async with database.session() as session:
        await session.execute(select(1))  # the connection and its transaction are ready
        before = base.utcnow()
        server: dt.datetime = (await session.execute(select(func.clock_timestamp()))).scalar_one()
        after = base.utcnow()
    skew = (before + (after - before) / 2 - server).total_seconds()
    CLOCK_SKEW.set(skew)
    return skew


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def forget_dead_workers() -> None:
    """Drop the live-mode gauges of worker processes that no longer run (multi-process mode).

    A ``live*`` gauge is summed (or taken) over the files of the processes that have not
    been marked dead, and nothing marks a worker dead when it crashes: ``raiz serve``
    restarts it, and the dead worker's pool (connections checked out, capacity) and its
    last database counts (overdue deadlines, running tables) were aggregated forever.
    Every worker calls this at start-up and with its periodic gauges.
    """
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory:
        return
    pids = set()
    for path in Path(directory).glob("gauge_live*_*.db"):
        suffix = path.stem.rpartition("_")[2]
        if suffix.isdigit():
            pids.add(int(suffix))
    for pid in pids:
        if not _running(pid):
            multiprocess.mark_process_dead(pid, directory)


def forget_this_worker() -> None:
    """At a worker's shutdown: its live-mode gauges stop counting."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        multiprocess.mark_process_dead(os.getpid(), directory)


def update_pool_gauges(engine: AsyncEngine, capacity: int) -> None:
    """Copy the current pool figures of ``engine`` into the gauges."""
    pool = engine.sync_engine.pool
    size = getattr(pool, "size", None)
    checked_out = getattr(pool, "checkedout", None)
    overflow = getattr(pool, "overflow", None)
    if callable(size):
        DB_POOL_SIZE.set(size())
    if callable(checked_out):
        DB_POOL_CHECKED_OUT.set(checked_out())
    if callable(overflow):
        DB_POOL_OVERFLOW.set(max(0, overflow()))
    DB_POOL_CAPACITY.set(capacity)
