"""Giving up the seats suspended accounts hold at tables that have not started.

A suspension (``app.accounts.suspension``) is committed first; then each seat of the account at
an open table is given up with its entry refunded, one table per transaction (a table's lock,
then the wallets: the order every refund takes, so this never deadlocks with a cancellation).
The suspension request does it at once for its account; a periodic job does it for every
suspended account, so a seat left by an interrupted request is given up within a minute.  A
seat whose account was reinstated meanwhile is kept; a table that started meanwhile keeps the
player, whose turns its timers play.

A table filled while a seated account was suspended waits, open and full, for that seat to be
given up (``TableService.seat``).  When the account is reinstated first, the seat is kept and
nothing else would start the table (it takes no seat; only its creator could start it) until
its fill deadline cancels it: the job starts every such table, as its last seat would have.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Final

import structlog
from sqlalchemy import bindparam, func, select

from app.accounts.models import User
from app.tables.models import Seat, Table
from app.tables.service import TableService

if TYPE_CHECKING:
    from app.db import Database
    from app.tables.runtime import TableRuntime

__all__ = ("RELEASE_INTERVAL_S", "SuspendedSeats")

RELEASE_INTERVAL_S: Final = 60.0
"""How often every worker's scheduler gives up the seats suspended accounts still hold."""

logger = structlog.get_logger("raiz.tables")


class SuspendedSeats:
    """The seats of suspended accounts at open tables, given up and refunded."""

    def __init__(self, database: Database, runtime: TableRuntime) -> None:
        self._database = database
        self._runtime = runtime

    async def release(self, user_id: uuid.UUID | None = None) -> int:
        """Give up the seats at open tables of ``user_id`` (every suspended account by
        default, then start the full tables none of them holds); returns how many seats were
        given up."""
        query = (
            select(Seat.table_id, Seat.user_id)
            .join(Table, Table.id == Seat.table_id)
            .join(User, User.id == Seat.user_id)
            .where(
                Seat.left_at.is_(None),
                # inline: a generic plan for a parameter would scan every seat ever taken
                Table.status == bindparam("open_status", "open", literal_execute=True),
                User.suspended_at.is_not(None),
            )
            .order_by(Seat.table_id, Seat.user_id)
        )
        if user_id is not None:
            query = query.where(Seat.user_id == user_id)
        async with self._database.session() as session:
            held = (await session.execute(query)).all()
        released = 0
        for table_id, holder in held:
            try:
                released += await self._give_up(table_id, holder)
            except Exception:  # one table failing (rolled back) must not hold up the others
                logger.exception("suspended_seat_failed", table_id=str(table_id))
        if user_id is None:
            await self._start_full_tables()
        return released

    async def _start_full_tables(self) -> None:
        """Start the open tables whose every seat is taken, none by a suspended account."""
        seated = (
            select(func.count())
            .where(Seat.table_id == Table.id, Seat.left_at.is_(None))
            .correlate(Table)
            .scalar_subquery()
        )
        query = (
            select(Table.id)
            .where(
                Table.status == bindparam("open_status", "open", literal_execute=True),
                seated >= Table.seat_count,
            )
            .order_by(Table.id)
        )
        async with self._database.session() as session:
            full = list(await session.scalars(query))
        for table_id in full:
            try:
                async with self._database.session() as session:
                    service = TableService(self._runtime.context(session))
                    if not await service.start_full(table_id):
                        continue
                    await session.commit()
            except Exception:  # one table failing (rolled back) must not hold up the others
                logger.exception("full_table_start_failed", table_id=str(table_id))
                continue
            logger.info("full_table_started", table_id=str(table_id))

    async def _give_up(self, table_id: uuid.UUID, user_id: uuid.UUID) -> int:
        async with self._database.session() as session:
            # the account first, then the table: the order of a seat being taken
            suspended_at = await session.scalar(
                select(User.suspended_at).where(User.id == user_id).with_for_update(read=True)
            )
            if suspended_at is None:  # reinstated meanwhile: the seat stays
                return 0
            service = TableService(self._runtime.context(session))
            if not await service.give_up_seat(table_id, user_id):
                return 0
            await session.commit()
        logger.info("suspended_seat_given_up", table_id=str(table_id), user_id=str(user_id))
        return 1
