"""The deadline runner's edges, each broken alone: the order of a backlog, a sweep's limit, a row
another worker holds, a kind with no handler, a failure recorded after another worker fired the
deadline, what each outcome counts, and what an operator's retry lists, clears and returns."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import select, text, update

from app.timers import Deadline, DeadlineRunner
from app.timers.runner import (
    MAX_ATTEMPTS,
    failed_deadlines,
    retry_failed_deadlines,
)
from tests.integration.timers.support import acts, add_deadlines, retry_now, statuses

pytestmark = pytest.mark.asyncio


def _handled(kind: str, outcome: str) -> float:
    labels = {"kind": kind, "outcome": outcome}
    return REGISTRY.get_sample_value("raiz_deadlines_handled_total", labels) or 0.0


async def _ids_by_token(database) -> dict[str, int]:
    async with database.session() as session:
        return dict((await session.execute(select(Deadline.token, Deadline.id))).all())


async def test_a_backlog_fires_oldest_due_first_and_a_sweep_stops_at_its_limit(database):
    for token, due_in_s in (("b", -20), ("d", -5), ("a", -30), ("c", -10), ("e", -1)):
        await add_deadlines(database, 1, token=token, due_in_s=due_in_s)
    order: list[str] = []

    async def handler(session, deadline):
        order.append(deadline.token)
        return True

    runner = DeadlineRunner(database, {"test": handler})
    assert await runner.run_due(limit=2) == 2
    assert order == ["a", "b"]
    assert await runner.run_due(limit=2) == 2
    assert await runner.run_due(limit=2) == 1
    assert order == ["a", "b", "c", "d", "e"]


async def test_a_deadline_another_worker_holds_does_not_hold_up_the_next(database):
    await add_deadlines(database, 1, token="held", due_in_s=-20)
    await add_deadlines(database, 1, token="free", due_in_s=-10)
    fired: list[str] = []

    async def handler(session, deadline):
        fired.append(deadline.token)
        return True

    async with database.session() as other_worker:
        # another worker is in the middle of firing the older one
        await other_worker.execute(
            text("SELECT id FROM game.deadlines WHERE token = 'held' FOR UPDATE")
        )
        runner = DeadlineRunner(database, {"test": handler})
        assert await asyncio.wait_for(runner.run_due(limit=1), timeout=10) == 1
        assert fired == ["free"]
        await other_worker.rollback()
    assert await runner.run_due() == 1
    assert fired == ["free", "held"]


async def test_a_deadline_of_a_kind_with_no_handler_is_stale_not_fired(database):
    kind = "orphan"
    await add_deadlines(database, 1, kind=kind)
    stale, fired = _handled(kind, "stale"), _handled(kind, "fired")
    assert await DeadlineRunner(database, {"test": acts}).run_due() == 1
    assert await statuses(database) == [("stale", 0)]
    assert (_handled(kind, "stale") - stale, _handled(kind, "fired") - fired) == (1, 0)


async def test_each_outcome_is_counted_under_its_kind(database):
    kind = "counted"
    await add_deadlines(database, 2, kind=kind, token="now")
    await add_deadlines(database, 1, kind=kind, token="later")
    await add_deadlines(database, 1, kind=kind, token="broken")
    outcomes = ("fired", "stale", "error", "failed")
    before = {outcome: _handled(kind, outcome) for outcome in outcomes}

    async def handler(session, deadline):
        if deadline.token == "broken":
            raise RuntimeError("boom")
        return deadline.token == "now"

    runner = DeadlineRunner(database, {kind: handler})
    for _ in range(MAX_ATTEMPTS):
        await retry_now(database)
        await runner.run_due()
    counted = {outcome: _handled(kind, outcome) - before[outcome] for outcome in outcomes}
    assert counted == {"fired": 2, "stale": 1, "error": MAX_ATTEMPTS - 1, "failed": 1}


async def test_a_failure_recorded_after_another_worker_fired_the_deadline_changes_nothing(
    database,
):
    # The failing attempt rolled back; before it records the failure, another worker claims
    # the deadline (it is pending and due) and fires it.  The late failure record must neither
    # count an attempt against a fired deadline nor park it as failed.
    await add_deadlines(database, 1)
    async with database.session() as session:
        await session.execute(update(Deadline).values(attempts=MAX_ATTEMPTS - 1))
        await session.commit()

    async def broken(session, deadline):
        raise RuntimeError("boom")

    class Overtaken(DeadlineRunner):
        async def _record_failure(self, deadline_id: int, kind: str) -> None:
            assert await DeadlineRunner(database, {"test": acts}).run_due() == 1
            await super()._record_failure(deadline_id, kind)

    assert await Overtaken(database, {"test": broken}).run_due(limit=1) == 1
    assert await statuses(database) == [("fired", MAX_ATTEMPTS - 1)]


async def _park(database, handler_kind: str = "test") -> None:
    async def broken(session, deadline):
        raise RuntimeError("boom")

    runner = DeadlineRunner(database, {handler_kind: broken})
    for _ in range(MAX_ATTEMPTS):
        await retry_now(database)
        await runner.run_due()


async def test_parked_deadlines_are_listed_oldest_due_first(database):
    for token, due_in_s in (("b", -20), ("c", -10), ("a", -30)):
        await add_deadlines(database, 1, token=token, due_in_s=due_in_s)
    await _park(database)
    async with database.session() as session:
        assert [deadline.token for deadline in await failed_deadlines(session)] == ["a", "b", "c"]


async def test_a_retried_deadline_is_pending_afresh_and_the_ids_come_back_in_order(database):
    for token in ("first", "second", "third"):
        await add_deadlines(database, 1, token=token)
    await _park(database)
    ids = await _ids_by_token(database)
    async with database.session() as session:
        # the first row is written again after the others: a scan now meets it last
        await session.execute(
            update(Deadline).where(Deadline.id == ids["first"]).values(token="first")
        )
        await session.commit()
    async with database.session() as session:
        assert await retry_failed_deadlines(session, None) == sorted(ids.values())
        await session.commit()
    async with database.session() as session:
        rows = (
            await session.execute(
                select(Deadline.status, Deadline.attempts, Deadline.retry_at, Deadline.handled_at)
            )
        ).all()
    assert [tuple(row) for row in rows] == [("pending", 0, None, None)] * 3
