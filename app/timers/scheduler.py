"""The per-worker APScheduler: sweeps due deadlines and runs periodic housekeeping.

APScheduler 3.11 (``AsyncIOScheduler``, in-memory job store) only provides the clock
inside each worker; the durable state is our own ``game.deadlines`` table.  We do not use
APScheduler 4 (alpha; its asyncpg event broker needs ``anyio<4.14``) nor 3.11's
``SQLAlchemyJobStore`` (synchronous driver, not safe for several processes sharing one
store).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from apscheduler.schedulers.asyncio import AsyncIOScheduler

if TYPE_CHECKING:
    from app.timers.runner import DeadlineRunner

__all__ = ("PeriodicJob", "build_scheduler")

PeriodicJob = tuple[str, Callable[[], Awaitable[object]], float]
"""(job id, coroutine function, interval in seconds)."""


def build_scheduler(
    runner: DeadlineRunner,
    poll_interval_s: float,
    periodic: Sequence[PeriodicJob] = (),
    scheduler: AsyncIOScheduler | None = None,
) -> AsyncIOScheduler:
    """A scheduler (not started) sweeping deadlines every ``poll_interval_s``."""
    scheduler = scheduler or AsyncIOScheduler(timezone="UTC")
    jobs: list[PeriodicJob] = [("deadlines", runner.run_due, poll_interval_s), *periodic]
    for job_id, function, interval_s in jobs:
        scheduler.add_job(
            function,
            "interval",
            seconds=interval_s,
            id=job_id,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=None,
        )
    return scheduler
