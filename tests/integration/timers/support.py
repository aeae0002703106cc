"""Shared steps of the deadline tests."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import select, update

from app.db import Database
from app.db.base import utcnow
from app.timers import Deadline, schedule_deadline


async def add_deadlines(
    database: Database, count: int, *, kind: str = "test", due_in_s: float = -1.0, token: str = "t"
) -> None:
    """``count`` deadlines of ``kind`` due ``due_in_s`` from now, each of its own table."""
    async with database.session() as session:
        for _ in range(count):
            schedule_deadline(
                session,
                uuid.uuid4(),
                kind,
                token,
                utcnow() + dt.timedelta(seconds=due_in_s),
            )
        await session.commit()


async def statuses(database: Database) -> list[tuple[str, int]]:
    """Every deadline's (status, attempts), sorted."""
    async with database.session() as session:
        rows = await session.execute(select(Deadline.status, Deadline.attempts))
        return sorted((status, attempts) for status, attempts in rows)


async def retry_now(database: Database) -> None:
    """Skip the back-off: every waiting retry becomes due."""
    async with database.session() as session:
        await session.execute(
            update(Deadline).where(Deadline.retry_at.is_not(None)).values(retry_at=utcnow())
        )
        await session.commit()


async def acts(session: object, deadline: Deadline) -> bool:
    """A handler that always acts."""
    return True
