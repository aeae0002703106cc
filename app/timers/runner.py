"""Claiming and firing due deadlines."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import structlog
from prometheus_client import Counter, Gauge, Histogram
from sqlalchemy import func, or_, select, update

from app.timers.models import Deadline

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.db import Database

__all__ = (
    "DEADLINES_FAILED",
    "DEADLINES_FIRED",
    "DEADLINES_OVERDUE",
    "SCHEDULER_LAG",
    "DeadlineHandler",
    "DeadlineRunner",
    "count_failed_deadlines",
    "count_overdue_deadlines",
    "failed_deadlines",
    "retry_delay_s",
    "retry_failed_deadlines",
    "schedule_deadline",
)

logger = structlog.get_logger("raiz.timers")

DeadlineHandler = Callable[["AsyncSession", Deadline], Awaitable[bool]]
"""Acts on a due deadline inside the claiming transaction; returns False when stale.
It must not commit; raising rolls the whole firing back (it will be retried)."""

MAX_ATTEMPTS = 8
"""A deadline whose handler raised this many times is parked as ``failed``."""
RETRY_BACKOFF_S = 1.0
MAX_RETRY_BACKOFF_S = 60.0
"""After its n-th failure a deadline waits ``min(60, 2**(n-1))`` s before the next attempt,
so a passing fault (a deadlock, a database restart, a statement timeout) is ridden out for
about two minutes before the deadline is parked, instead of five attempts in a few ms."""
MAX_PER_SWEEP = 500
"""Upper bound of deadlines one sweep handles, so a backlog cannot starve the loop."""

DEADLINES_FIRED = Counter(
    "raiz_deadlines_handled_total",
    "Deadlines handled, by kind and outcome (fired, stale, error, failed).",
    ["kind", "outcome"],
)
SCHEDULER_LAG = Histogram(
    "raiz_scheduler_lag_seconds",
    "Delay between a deadline's due time and its handling.",
    ["kind"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0),
)
DEADLINES_OVERDUE = Gauge(
    "raiz_deadlines_overdue",
    "Pending deadlines more than 5 s past due (a stuck or missing scheduler).",
    multiprocess_mode="livemostrecent",
)
DEADLINES_FAILED = Gauge(
    "raiz_deadlines_failed",
    "Deadlines parked as failed (their handler kept raising): tables wait on them until an "
    "operator runs `raiz deadlines retry`.",
    multiprocess_mode="livemostrecent",
)
OVERDUE_AFTER_S = 5.0
"""How late a pending deadline must be to count as overdue (sweeps run every 0.25 s)."""


def retry_delay_s(attempts: int) -> float:
    """How long a deadline waits after its ``attempts``-th failure."""
    return min(MAX_RETRY_BACKOFF_S, RETRY_BACKOFF_S * 2 ** (attempts - 1))


async def count_overdue_deadlines(database: Database) -> int:
    """Refresh ``raiz_deadlines_overdue`` from the database; returns the count."""
    cutoff = func.now() - dt.timedelta(seconds=OVERDUE_AFTER_S)
    async with database.session() as session:
        overdue = await session.scalar(
            select(func.count())
            .select_from(Deadline)
            .where(Deadline.status == "pending", Deadline.due_at < cutoff)
        )
    DEADLINES_OVERDUE.set(int(overdue or 0))
    return int(overdue or 0)


async def count_failed_deadlines(database: Database) -> int:
    """Refresh ``raiz_deadlines_failed`` from the database; returns the count."""
    async with database.session() as session:
        failed = await session.scalar(
            select(func.count()).select_from(Deadline).where(Deadline.status == "failed")
        )
    DEADLINES_FAILED.set(int(failed or 0))
    return int(failed or 0)


async def failed_deadlines(session: AsyncSession) -> list[Deadline]:
    """Every parked deadline, oldest due first."""
    query = select(Deadline).where(Deadline.status == "failed").order_by(Deadline.due_at)
    return list(await session.scalars(query))


async def retry_failed_deadlines(session: AsyncSession, ids: Sequence[int] | None) -> list[int]:
    """Put parked deadlines (all of them, or those of ``ids``) back in the queue with a fresh
    count of attempts; returns the ids re-queued.  Their due time is kept: handlers judge
    staleness by it, and the next sweep fires them (the caller commits)."""
    query = (
        update(Deadline)
        .where(Deadline.status == "failed")
        .values(status="pending", attempts=0, retry_at=None, handled_at=None)
        .returning(Deadline.id)
    )
    if ids is not None:
        query = query.where(Deadline.id.in_(list(ids)))
    return sorted(await session.scalars(query))


def schedule_deadline(
    session: AsyncSession, table_id: uuid.UUID, kind: str, token: str, due_at: dt.datetime
) -> Deadline:
    """Add a deadline in the caller's transaction (it exists once the caller commits)."""
    deadline = Deadline(table_id=table_id, kind=kind, token=token, due_at=due_at)
    session.add(deadline)
    return deadline


class DeadlineRunner:
    """Fires due deadlines, one transaction each, safely from any number of workers."""

    def __init__(self, database: Database, handlers: Mapping[str, DeadlineHandler]) -> None:
        self._database = database
        self._handlers = dict(handlers)

    def register(self, kind: str, handler: DeadlineHandler) -> None:
        """Route deadlines of ``kind`` to ``handler``."""
        self._handlers[kind] = handler

    async def run_due(self, limit: int = MAX_PER_SWEEP) -> int:
        """Handle due deadlines until none is left (or ``limit``); returns how many."""
        handled = 0
        while handled < limit:
            if not await self._fire_one():
                break
            handled += 1
        return handled

    async def _fire_one(self) -> bool:
        # Due by the database's clock, never the worker's: a deadline armed by one worker is
        # due at the same moment for every other.  ``now()`` (the transaction's start: the claim
        # is its first statement) and not ``clock_timestamp()``: stable within the statement,
        # so ``ix_deadlines_pending_due`` serves the range.
        async with self._database.session() as session:
            deadline = await session.scalar(
                select(Deadline)
                .where(
                    Deadline.status == "pending",
                    Deadline.due_at <= func.now(),
                    or_(Deadline.retry_at.is_(None), Deadline.retry_at <= func.now()),
                )
                .order_by(Deadline.due_at, Deadline.id)
                .limit(1)
                .with_for_update(skip_locked=True)
            )
            if deadline is None:
                return False
            deadline_id, kind, due_at = deadline.id, deadline.kind, deadline.due_at
            handler = self._handlers.get(kind)
            started = time.perf_counter()
            try:
                acted = await handler(session, deadline) if handler else False
                # handled when the handler is done (``clock_timestamp()``: the transaction
                # started at the claim), in the statement that marks it (no extra round trip)
                handled_at = await session.scalar(
                    update(Deadline)
                    .where(Deadline.id == deadline_id)
                    .values(status="fired" if acted else "stale", handled_at=func.clock_timestamp())
                    .returning(Deadline.handled_at)
                    .execution_options(synchronize_session="fetch")
                )
                assert handled_at is not None  # the row is locked by this transaction
                await session.commit()
            except Exception:
                await session.rollback()
                logger.exception("deadline_handler_failed", deadline_id=deadline_id, kind=kind)
                await self._record_failure(deadline_id, kind)
                return True
        outcome = "fired" if acted else "stale"
        if handler is None:
            logger.warning("deadline_without_handler", deadline_id=deadline_id, kind=kind)
        DEADLINES_FIRED.labels(kind, outcome).inc()
        SCHEDULER_LAG.labels(kind).observe(max(0.0, (handled_at - due_at).total_seconds()))
        logger.debug(
            "deadline_handled",
            deadline_id=deadline_id,
            kind=kind,
            outcome=outcome,
            handler_ms=round((time.perf_counter() - started) * 1000, 2),
        )
        return True

    async def _record_failure(self, deadline_id: int, kind: str) -> None:
        async with self._database.session() as session:
            attempts = await session.scalar(
                update(Deadline)
                .where(Deadline.id == deadline_id, Deadline.status == "pending")
                .values(attempts=Deadline.attempts + 1)
                .returning(Deadline.attempts)
            )
            if attempts is not None and attempts >= MAX_ATTEMPTS:
                await session.execute(
                    update(Deadline)
                    .where(Deadline.id == deadline_id)
                    .values(status="failed", handled_at=func.now())
                )
                DEADLINES_FIRED.labels(kind, "failed").inc()
                logger.error("deadline_parked", deadline_id=deadline_id, kind=kind)
            else:
                if attempts is not None:  # (None: handled meanwhile, nothing to wait for)
                    # the database's clock, as the claim's ``retry_at <= now()`` reads it
                    retry_at = func.now() + dt.timedelta(seconds=retry_delay_s(attempts))
                    await session.execute(
                        update(Deadline).where(Deadline.id == deadline_id).values(retry_at=retry_at)
                    )
                DEADLINES_FIRED.labels(kind, "error").inc()
            await session.commit()
