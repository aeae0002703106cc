"""Durable deadlines: fire once across workers, survive restarts, staleness, failure parking."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import pytest
from sqlalchemy import func, select, update

from app.db import Database
from app.db.base import database_now, utcnow
from app.timers import Deadline, DeadlineRunner, schedule_deadline
from app.timers.runner import MAX_ATTEMPTS, retry_delay_s
from tests.helpers import worker_clock_off
from tests.integration.timers.support import acts, add_deadlines, retry_now, statuses

pytestmark = pytest.mark.asyncio


async def test_each_due_deadline_fires_exactly_once_across_concurrent_workers(database, settings):
    await add_deadlines(database, 60)
    fired: list[int] = []

    async def handler(session, deadline):
        fired.append(deadline.id)
        await asyncio.sleep(0)  # let other workers interleave
        return True

    workers = [Database.connect(settings.database_url, settings) for _ in range(4)]
    try:
        runners = [DeadlineRunner(worker, {"test": handler}) for worker in workers]
        counts = await asyncio.gather(*(runner.run_due() for runner in runners))
    finally:
        for worker in workers:
            await worker.dispose()
    assert sum(counts) == 60
    assert len(fired) == len(set(fired)) == 60
    assert await statuses(database) == [("fired", 0)] * 60


async def test_future_deadlines_wait_and_late_ones_fire_at_the_first_sweep(database):
    await add_deadlines(database, 1, due_in_s=3600)
    await add_deadlines(database, 2, due_in_s=-600)  # due while "the service was down"
    runner = DeadlineRunner(database, {"test": acts})
    assert await runner.run_due() == 2
    assert await runner.run_due() == 0
    assert await statuses(database) == [("fired", 0), ("fired", 0), ("pending", 0)]


async def test_a_stale_deadline_is_marked_and_does_nothing(database):
    await add_deadlines(database, 1, token="old-step")

    async def handler(session, deadline):
        return deadline.token == "current-step"

    assert await DeadlineRunner(database, {"test": handler}).run_due() == 1
    assert await statuses(database) == [("stale", 0)]


async def test_a_failing_handler_rolls_back_its_effect_and_is_parked_after_retries(database):
    await add_deadlines(database, 1)
    effects = []

    async def handler(session, deadline):
        schedule_deadline(session, uuid.uuid4(), "effect", "x", utcnow())
        effects.append(1)
        raise RuntimeError("boom")

    runner = DeadlineRunner(database, {"test": handler})
    for attempt in range(1, MAX_ATTEMPTS + 1):
        await retry_now(database)
        assert await runner.run_due(limit=1) == 1
        expected = "failed" if attempt == MAX_ATTEMPTS else "pending"
        assert await statuses(database) == [(expected, attempt)]
    assert len(effects) == MAX_ATTEMPTS
    await retry_now(database)
    assert await runner.run_due() == 0


async def test_a_failed_attempt_waits_its_back_off_before_the_next(database):
    await add_deadlines(database, 1)
    calls = []

    async def handler(session, deadline):
        calls.append(deadline.attempts)
        if len(calls) < 3:
            raise ConnectionResetError("the database went away")
        return True

    runner = DeadlineRunner(database, {"test": handler})
    for attempts in (1, 2):
        started = utcnow()
        assert await runner.run_due() == 1  # fails; the back-off hides it from the sweeps
        assert await runner.run_due() == 0
        async with database.session() as session:
            deadline = (await session.scalars(select(Deadline))).one()
        assert deadline.status == "pending" and deadline.attempts == attempts
        wait = (deadline.retry_at - started).total_seconds()
        assert retry_delay_s(attempts) <= wait < retry_delay_s(attempts) + 5
        await retry_now(database)
    assert await runner.run_due() == 1
    assert calls == [0, 1, 2]
    assert await statuses(database) == [("fired", 2)]
    assert [retry_delay_s(n) for n in range(1, MAX_ATTEMPTS)] == [1, 2, 4, 8, 16, 32, 60]


async def test_failed_deadlines_are_counted_and_an_operator_puts_them_back(database):
    from prometheus_client import REGISTRY

    from app.timers.runner import (
        count_failed_deadlines,
        failed_deadlines,
        retry_failed_deadlines,
    )

    await add_deadlines(database, 3)
    broken = True

    async def handler(session, deadline):
        if broken:
            raise RuntimeError("boom")
        return True

    runner = DeadlineRunner(database, {"test": handler})
    for _ in range(MAX_ATTEMPTS):
        await retry_now(database)
        assert await runner.run_due() == 3
    assert await count_failed_deadlines(database) == 3
    assert REGISTRY.get_sample_value("raiz_deadlines_failed") == 3
    async with database.session() as session:
        first, second, third = [deadline.id for deadline in await failed_deadlines(session)]
        assert await retry_failed_deadlines(session, [first, 10**12]) == [first]
        await session.commit()
    broken = False
    assert await runner.run_due() == 1  # at once: its due time has long passed
    assert await count_failed_deadlines(database) == 2
    async with database.session() as session:
        assert await retry_failed_deadlines(session, None) == sorted([second, third])
        await session.commit()
    assert await runner.run_due() == 2
    assert await count_failed_deadlines(database) == 0
    assert REGISTRY.get_sample_value("raiz_deadlines_failed") == 0
    assert await statuses(database) == [("fired", 0)] * 3


async def test_the_app_scheduler_fires_deadlines_in_the_background(settings, database):
    from litestar.testing import AsyncTestClient

    from app.main import create_app
    from tests.conftest import make_settings

    fired = asyncio.Event()

    async def handler(session, deadline):
        fired.set()
        return True

    app = create_app(make_settings(settings.database_url, scheduler_poll_interval_s=0.05))
    app.state.deadline_runner.register("test", handler)
    async with AsyncTestClient(app=app):
        # written through this test's own pool: the app's pool belongs to the app's loop
        await add_deadlines(database, 1, due_in_s=0.2)
        await asyncio.wait_for(fired.wait(), timeout=5)


async def test_overdue_gauge_counts_pending_deadlines_late_beyond_the_margin(database):
    from prometheus_client import REGISTRY

    from app.timers.runner import OVERDUE_AFTER_S, count_overdue_deadlines

    await add_deadlines(database, 3, due_in_s=-(OVERDUE_AFTER_S + 30))  # stuck
    await add_deadlines(database, 2, due_in_s=-0.5)  # due, within the margin
    await add_deadlines(database, 4, due_in_s=60)  # not due yet
    assert await count_overdue_deadlines(database) == 3
    assert REGISTRY.get_sample_value("raiz_deadlines_overdue") == 3
    runner = DeadlineRunner(database, {"test": acts})
    await runner.run_due()
    assert await count_overdue_deadlines(database) == 0
    assert REGISTRY.get_sample_value("raiz_deadlines_overdue") == 0


# --- one clock, the database's -------------------------------------------------------------------
HOUR = dt.timedelta(hours=1)


async def _add_at_database_time(database, *, kind="test", due_in_s: float) -> None:
    """A deadline due ``due_in_s`` from the database's now (not this worker's)."""
    async with database.session() as session:
        now = await database_now(session)
        schedule_deadline(session, uuid.uuid4(), kind, "t", now + dt.timedelta(seconds=due_in_s))
        await session.commit()


async def _database_now(database) -> dt.datetime:
    async with database.session() as session:
        return await database_now(session)


async def test_a_worker_whose_clock_runs_ahead_fires_nothing_early_nor_counts_it_overdue(
    database, monkeypatch
):
    from app.timers.runner import count_overdue_deadlines

    await _add_at_database_time(database, due_in_s=60)
    fired = []

    async def handler(session, deadline):
        fired.append(deadline.id)
        return True

    runner = DeadlineRunner(database, {"test": handler})
    with monkeypatch.context() as ahead:
        worker_clock_off(ahead, HOUR)
        assert await runner.run_due() == 0
        assert await count_overdue_deadlines(database) == 0
    assert fired == []
    assert await statuses(database) == [("pending", 0)]


async def test_a_worker_whose_clock_is_behind_fires_a_due_deadline_and_dates_it_rightly(
    database, monkeypatch
):
    from prometheus_client import REGISTRY

    from app.timers.runner import count_overdue_deadlines

    await _add_at_database_time(database, kind="clock", due_in_s=-1)
    await _add_at_database_time(database, kind="stuck", due_in_s=-60)
    lag = {"kind": "clock"}
    lag_before = REGISTRY.get_sample_value("raiz_scheduler_lag_seconds_sum", lag) or 0.0
    before = await _database_now(database)
    with monkeypatch.context() as behind:
        worker_clock_off(behind, -HOUR)
        # (the overdue gauge of a worker an hour behind still sees the stuck deadline)
        assert await count_overdue_deadlines(database) == 1
        runner = DeadlineRunner(database, {"clock": acts})
        assert await runner.run_due() == 2  # ("stuck" has no handler: stale)
    after = await _database_now(database)
    async with database.session() as session:
        handled = await session.scalar(select(Deadline.handled_at).where(Deadline.kind == "clock"))
    assert handled is not None and before <= handled <= after
    # the lag is a second or so, not an hour either way
    lag_after = REGISTRY.get_sample_value("raiz_scheduler_lag_seconds_sum", lag)
    assert lag_after is not None and 0.5 < lag_after - lag_before < 30


async def test_a_skewed_worker_backs_off_and_parks_a_failing_deadline_by_the_database_clock(
    database, monkeypatch
):
    # The back-off ends by the database's clock: with the workers' clocks, one an hour behind
    # would end it at once (every attempt in the same sweep, parked within milliseconds), and
    # one an hour ahead would retry at once.
    await _add_at_database_time(database, due_in_s=-1)

    async def handler(session, deadline):
        raise ConnectionResetError("the database went away")

    runner = DeadlineRunner(database, {"test": handler})
    with monkeypatch.context() as behind:
        worker_clock_off(behind, -HOUR)
        assert await runner.run_due() == 1
        assert await runner.run_due() == 0
    with monkeypatch.context() as ahead:
        worker_clock_off(ahead, HOUR)
        assert await runner.run_due() == 0  # nor does the back-off end an hour early
    async with database.session() as session:
        wait = await session.scalar(select(Deadline.retry_at - func.now()))
    assert await statuses(database) == [("pending", 1)]
    assert wait is not None
    assert dt.timedelta(0) < wait <= dt.timedelta(seconds=retry_delay_s(1))
    # the last attempt fails on a worker an hour ahead: parked at the database's time
    async with database.session() as session:
        await session.execute(
            update(Deadline).values(attempts=MAX_ATTEMPTS - 1, retry_at=func.now())
        )
        await session.commit()
    before = await _database_now(database)
    with monkeypatch.context() as ahead:
        worker_clock_off(ahead, HOUR)
        assert await runner.run_due() == 1
    after = await _database_now(database)
    async with database.session() as session:
        status, handled = (
            await session.execute(select(Deadline.status, Deadline.handled_at))
        ).one()
    assert status == "failed"
    assert before <= handled <= after
