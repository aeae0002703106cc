"""What happens when a table's deadline passes, and the presence sweep (freeze/abandon)."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog
from sqlalchemy import and_, func, select, update

from app.db.base import transaction_clock
from app.metrics import count_on_commit
from app.tables import metrics
from app.tables.driver import TableDriver
from app.tables.hosting import GameSpec, game_for_preset
from app.tables.models import Presence, Seat, Table
from app.tables.service import TableService, lock_table
from app.timers import schedule_deadline

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings
    from app.db import Database
    from app.tables.runtime import TableRuntime
    from app.timers import Deadline, DeadlineHandler

__all__ = ("PresenceSweeper", "table_deadline_handlers")

logger = structlog.get_logger("raiz.tables.timers")


def table_deadline_handlers(runtime: TableRuntime) -> dict[str, DeadlineHandler]:
    """Handlers for the deadline kinds of tables: ``game``, ``deal``, ``fill``, ``abandon``."""

    async def locked(session: AsyncSession, deadline: Deadline) -> Table:
        return await TableService(runtime.context(session)).lock(deadline.table_id)

    async def on_game(session: AsyncSession, deadline: Deadline) -> bool:
        table = await locked(session, deadline)
        if table.status != "running" or table.frozen_at is not None:
            return False
        driver = TableDriver(runtime.context(session), table, _spec(table))
        current = driver.match.current_deadline()
        if current is None or str(current.token) != deadline.token:
            return False
        if table.timer_due_at is not None and deadline.due_at < table.timer_due_at:
            return False  # re-armed later for the same token (the table thawed meanwhile)
        await driver.apply_input(
            {"type": "timeout", "token": current.token},
            {"deadline": deadline.id, "timer": current.kind},
        )
        await driver.save()
        if current.seats:
            # the players this timer waited for did not act: one more timeout in a row each
            # (row by row in the presence refresh's lock order, so that the two never deadlock)
            seats = await driver.seats_by_engine_seat()
            for user_id in sorted(seats[seat].user_id for seat in current.seats if seat in seats):
                await session.execute(
                    update(Presence)
                    .where(Presence.table_id == table.id, Presence.user_id == user_id)
                    .values(timeouts_in_a_row=Presence.timeouts_in_a_row + 1)
                )
        count_on_commit(session, metrics.TIMEOUTS.labels(current.kind))
        return True

    async def on_deal(session: AsyncSession, deadline: Deadline) -> bool:
        table = await locked(session, deadline)
        if table.status != "running" or deadline.token != f"deal:{table.round_number}":
            return False
        driver = TableDriver(runtime.context(session), table, _spec(table))
        pending = driver.match.pending_chance()
        if pending is None or pending.round_number != table.round_number:
            return False
        await driver.resolve_chance()
        await driver.save()
        return True

    async def on_fill(session: AsyncSession, deadline: Deadline) -> bool:
        table = await locked(session, deadline)
        if table.status != "open":
            return False
        await TableService(runtime.context(session)).cancel_locked(table, "fill_deadline")
        return True

    async def on_abandon(session: AsyncSession, deadline: Deadline) -> bool:
        table = await locked(session, deadline)
        if (
            table.status != "running"
            or table.frozen_at is None
            or deadline.token != abandon_token(table.frozen_at)
            or table.frozen_keeper_seat is None
        ):
            return False
        driver = TableDriver(runtime.context(session), table, _spec(table))
        now = await transaction_clock(session)
        attendance = await _attendance(session, driver, now, runtime.settings)
        if not attendance.deserted:
            # Somebody came back before the deadline, after the last presence sweep: nobody
            # abandoned the table (RULES.md §3), so it thaws here rather than ending.
            await _thaw(driver, attendance.online)
            await driver.save()
            return True
        keeper = table.frozen_keeper_seat
        if keeper not in attendance.online:
            # The keeper chosen at the freeze is gone (they left, or an absent player's
            # action ended a round and took their last lives): the freeze's own rule picks
            # again.  An eliminated keeper would otherwise fail the deadline for good and
            # leave the prize in escrow.
            keeper = attendance.keeper()
        await driver.apply_input(
            {"type": "abandon_win", "seat": keeper},
            {"deadline": deadline.id, "timer": "abandon"},
        )
        await driver.save()
        return True

    return {"game": on_game, "deal": on_deal, "fill": on_fill, "abandon": on_abandon}


def abandon_token(frozen_at: dt.datetime) -> str:
    """The token of the abandon deadline armed when a table froze at ``frozen_at``."""
    return f"abandon:{frozen_at.isoformat()}"


_NEVER = dt.datetime.min.replace(tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class _Attendance:
    """Who of a running table's living players is connected, and who of them is playing."""

    alive: tuple[int, ...]
    online: list[int]
    """The living seats whose player was seen within the presence grace, in seat order."""
    playing: list[int]
    """Those of ``online`` who are not away: fewer than ``RAIZ_AWAY_AFTER_TIMEOUTS`` of their
    own timers ran out in a row.  Away players may be connected but do not play; a timeout
    never closes a hand, so a match played by its timers alone would never end."""
    seen: dict[int, dt.datetime]
    acted: dict[int, dt.datetime]

    @property
    def deserted(self) -> bool:
        """Whether the table should be frozen: at most one living player connected
        (RULES.md §3), or none of the connected ones playing."""
        return len(self.alive) >= 2 and (len(self.online) <= 1 or not self.playing)

    def keeper(self) -> int:
        """Who wins a frozen table if nobody comes back: the living player connected (and
        playing, if one is); of several connected and all away, the one who acted last;
        when nobody is connected, the living player seen last (the lower seat on a tie)."""
        if self.playing:
            return self.playing[0]
        if self.online:
            return max(self.online, key=lambda seat: (self.acted.get(seat, _NEVER), -seat))
        return max(self.alive, key=lambda seat: (self.seen.get(seat, _NEVER), -seat))


async def _attendance(
    session: AsyncSession, driver: TableDriver, now: dt.datetime, settings: Settings
) -> _Attendance:
    grace = dt.timedelta(seconds=settings.presence_grace_s)
    alive = tuple(sorted(driver.spec.alive_seats(driver.match)))
    seats = await driver.seats_by_engine_seat()
    rows = {
        user_id: (seen, timeouts, acted)
        for user_id, seen, timeouts, acted in await session.execute(
            select(
                Presence.user_id,
                Presence.last_seen_at,
                Presence.timeouts_in_a_row,
                Presence.acted_at,
            ).where(Presence.table_id == driver.table.id)
        )
    }
    # players never seen are absent; a player who left has no seat
    presence = {
        seat: rows[seats[seat].user_id]
        for seat in alive
        if seats.get(seat) and seats[seat].user_id in rows
    }
    online = [seat for seat, (seen, _, _) in presence.items() if seen >= now - grace]
    return _Attendance(
        alive=alive,
        online=online,
        playing=[seat for seat in online if presence[seat][1] < settings.away_after_timeouts],
        seen={seat: seen for seat, (seen, _, _) in presence.items()},
        acted={seat: acted for seat, (_, _, acted) in presence.items() if acted is not None},
    )


async def _thaw(driver: TableDriver, online: Sequence[int]) -> None:
    """Unfreeze the driver's table (its timer restarts when the driver saves)."""
    driver.table.frozen_at = None
    driver.table.frozen_keeper_seat = None
    await driver.note({"type": "thawed", "online": list(online)})


def _spec(table: Table) -> GameSpec:
    spec = game_for_preset(table.preset)
    if spec is None:
        raise RuntimeError(f"no game hosts preset {table.preset}")
    return spec


class PresenceSweeper:
    """Freezes a running table when at most one living player is connected; thaws it when
    two are back; arms the abandon deadline while frozen."""

    def __init__(self, database: Database, runtime: TableRuntime) -> None:
        self._database = database
        self._runtime = runtime

    async def sweep(self) -> int:
        """Check every running table whose connection count suggests a change (seen within
        the grace by the database's clock, as presence is dated)."""
        grace = dt.timedelta(seconds=self._runtime.settings.presence_grace_s)
        async with self._database.session() as session:
            connected = func.count(Presence.user_id).filter(
                Presence.last_seen_at >= func.now() - grace
            )
            away = func.count(Presence.user_id).filter(
                Presence.timeouts_in_a_row >= self._runtime.settings.away_after_timeouts
            )
            rows = await session.execute(
                select(Table.id, Table.frozen_at, connected, away, func.count(Seat.id))
                .join(Seat, and_(Seat.table_id == Table.id, Seat.left_at.is_(None)))
                .outerjoin(
                    Presence,
                    and_(Presence.table_id == Table.id, Presence.user_id == Seat.user_id),
                )
                .where(Table.status == "running")
                .group_by(Table.id)
            )
            # The counts include eliminated players (who may stay to watch): a running table
            # with anybody gone may be down to one living player connected, one with anybody
            # away may have nobody playing.
            candidates = [
                table_id
                for table_id, frozen_at, count, away_count, seated in rows
                if (frozen_at is None and (count < seated or away_count > 0))
                or (frozen_at is not None and count >= 2)
            ]
        changed = 0
        for table_id in candidates:
            changed += await self._evaluate(table_id)
        return changed

    async def _evaluate(self, table_id: uuid.UUID) -> int:
        async with self._database.session() as session:
            table = await lock_table(session, table_id, skip_locked=True)
            if table is None or table.status != "running":
                return 0
            context = self._runtime.context(session)
            driver = TableDriver(context, table, _spec(table))
            now = await transaction_clock(session)
            attendance = await _attendance(session, driver, now, self._runtime.settings)
            online = attendance.online
            if table.frozen_at is None and attendance.deserted:
                keeper = attendance.keeper()
                table.frozen_at = now
                table.frozen_keeper_seat = keeper
                abandon_after_ms = int(table.options.get("abandon_after_ms", 600_000))
                due = now + dt.timedelta(milliseconds=abandon_after_ms)
                schedule_deadline(session, table.id, "abandon", abandon_token(now), due)
                self._runtime.wake_at(due)
                await driver.note(
                    {
                        "type": "frozen",
                        "keeper": keeper,
                        "online": online,
                        "away": [seat for seat in online if seat not in attendance.playing],
                    }
                )
            elif table.frozen_at is not None and not attendance.deserted:
                await _thaw(driver, online)
            else:
                return 0
            await driver.save()
            await session.commit()
            logger.info(
                "table_presence_change", table_id=str(table.id), frozen=bool(table.frozen_at)
            )
            return 1
