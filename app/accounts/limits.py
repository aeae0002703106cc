"""Entry limits a player sets on themselves (responsible gaming), and the check every paid
seat makes.

A player may cap what they pay in entries over a rolling day (24 h), week (7 days) and month
(30 days), each period on its own.  A tightening (a limit where there was none, or a lower
one) applies at once; a loosening (a higher limit, or none) only after the cooling-off
(``RAIZ_LIMIT_COOLING_OFF_S``), the old limit staying in force meanwhile.  A new request
replaces whatever was pending for that period: the latest wish wins, and a tightening cancels
a pending loosening.

What a player has *used* of a period is the entry of every seat they took within the window
and were not refunded (leaving before the start, a cancelled table); a seat costing an entry
is refused (``409 entry_limit_reached``) when, for any period with a limit in force, used +
entry would exceed it (:func:`require_within_limits`).  The entry is the seat's own
(``game.seats.entry_cents``, fixed once inserted), so the sum reads the player's seats of the
last 30 days from one partial index alone (``ix_seats_paid_by_user``, migration ``game_0022``),
without the tables they sat at.

One clock: the database's.  A seat's ``seated_at`` is the database's ``now()`` (the start of
the seat's transaction), and the check, the view and a change read the same ``now()`` in their
own transaction (:func:`database_now`) for the windows, the limit in force and when a
loosening applies; a worker whose clock is off moves neither.  Tests may still pass a ``now``
of their own.

``game.entry_limits`` holds one row per player and period as it stands (the limit in force,
and the pending loosening with when it applies: a due one is read as in force until the next
change folds it in), so the check on every paid seat reads at most three small rows, whatever
the player's history.  Every change is also a row of the insert-only
``game.entry_limit_changes`` (what, when asked, when it applies, who), written in the same
transaction: the kept record.

A player's check and their changes are serialized by a transaction-level advisory lock on
their id (:func:`lock_player_limits`), held until the seat or change commits: two seats at two
tables cannot both pass the check on the same used amount, and a change waits for a seat
being paid (and the reverse).  A seat takes it after the share lock on the account
(``require_active``) and before the table's lock; it never waits for a table's lock while a
table's holder waits for it (nothing takes it holding a table's lock).
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Select, func, select, text

from app.accounts.errors import user_not_found
from app.accounts.models import EntryLimit, EntryLimitChange, User
from app.db.base import database_now
from app.errors import ConflictError, NotFoundError
from app.tables.models import Seat

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = (
    "LIMITS_LOCK_SPACE",
    "PERIOD_WINDOWS",
    "EntryLimits",
    "PeriodLimit",
    "lock_player_limits",
    "require_period",
    "require_within_limits",
    "used_cents",
    "used_cents_query",
)

PERIOD_WINDOWS: Final = {
    "day": dt.timedelta(days=1),
    "week": dt.timedelta(days=7),
    "month": dt.timedelta(days=30),
}
"""The rolling window of each period (``ENTRY_LIMIT_PERIODS``, in that order)."""
LIMITS_LOCK_SPACE: Final = 0x72617A6C
"""First key of the two-key ``pg_advisory_xact_lock`` serializing one player's limit checks
and changes ("razl"; the second key is a hash of the player's id)."""


async def lock_player_limits(session: AsyncSession, user_id: uuid.UUID) -> None:
    """Serialize the player's limit checks and changes until the transaction ends (taking it
    again in the same transaction is free)."""
    await session.execute(
        text("SELECT pg_advisory_xact_lock(:space, hashtext(:user))"),
        {"space": LIMITS_LOCK_SPACE, "user": str(user_id)},
    )


@dataclass(frozen=True, slots=True)
class PeriodLimit:
    """One period's limit as it stands at a moment, and what the player used of it."""

    period: str
    limit_cents: int | None
    """The limit in force (None: no limit)."""
    pending: bool
    """Whether a loosening waits for its cooling-off."""
    pending_cents: int | None
    """The limit it asks for (None: no limit)."""
    applies_at: dt.datetime | None
    """When the pending loosening applies."""
    used_cents: int

    @property
    def remaining_cents(self) -> int | None:
        """What the player may still pay in entries in this window (None: no limit)."""
        if self.limit_cents is None:
            return None
        return max(0, self.limit_cents - self.used_cents)


def _in_force(row: EntryLimit | None, now: dt.datetime) -> tuple[int | None, bool]:
    """The limit in force at ``now`` and whether a loosening is still pending."""
    if row is None:
        return None, False
    if row.pending_applies_at is not None:
        if row.pending_applies_at <= now:
            return row.pending_cents, False
        return row.limit_cents, True
    return row.limit_cents, False


def used_cents_query(user_id: uuid.UUID, now: dt.datetime) -> Select[*tuple[Any, ...]]:
    """The sums of :func:`used_cents`: the seats' own entries, one range of the partial index
    ``ix_seats_paid_by_user`` (its predicate is the paid-and-not-refunded filter)."""
    seated = Seat.seated_at
    sums = [
        func.coalesce(func.sum(Seat.entry_cents).filter(seated > now - window), 0)
        for window in PERIOD_WINDOWS.values()
    ]
    return select(*sums).where(
        Seat.user_id == user_id,
        seated > now - max(PERIOD_WINDOWS.values()),
        Seat.entry_transfer_id.is_not(None),
        Seat.refund_transfer_id.is_(None),
    )


async def used_cents(session: AsyncSession, user_id: uuid.UUID, now: dt.datetime) -> dict[str, int]:
    """The entries the player paid within each period's window ending at ``now`` and were not
    refunded (one index-only range scan of the player's paid seats of the longest window)."""
    row = (await session.execute(used_cents_query(user_id, now))).one()
    return {period: int(total) for period, total in zip(PERIOD_WINDOWS, row, strict=True)}


async def _rows(
    session: AsyncSession, user_id: uuid.UUID, *, fresh: bool = False
) -> dict[str, EntryLimit]:
    query = select(EntryLimit).where(EntryLimit.user_id == user_id)
    if fresh:  # read again under the lock: another transaction may have changed them
        query = query.execution_options(populate_existing=True)
    return {row.period: row for row in await session.scalars(query)}


async def require_within_limits(
    session: AsyncSession, user_id: uuid.UUID, cents: int, now: dt.datetime | None = None
) -> None:
    """Refuse (``409 entry_limit_reached``) an entry of ``cents`` the player's limits in force
    at ``now`` (by default the database's ``now()``, the seating time of a seat inserted in the
    same transaction) do not leave room for; a free entry is never limited.  Takes the
    player's limits lock (:func:`lock_player_limits`) first, held until the caller commits the
    entry: take it before any table's lock."""
    if cents <= 0:
        return
    await lock_player_limits(session, user_id)
    if now is None:
        now = await database_now(session)
    rows = await _rows(session, user_id, fresh=True)
    limits = {period: _in_force(rows.get(period), now)[0] for period in PERIOD_WINDOWS}
    if all(limit is None for limit in limits.values()):
        return
    used = await used_cents(session, user_id, now)
    for period, limit in limits.items():
        if limit is not None and used[period] + cents > limit:
            raise ConflictError(
                f"This entry would take you past the {period} limit you set on your entries "
                f"(used {used[period]} of {limit} cents in the last "
                f"{_window_text(period)}).",
                code="entry_limit_reached",
                details={
                    "period": period,
                    "limit_cents": limit,
                    "used_cents": used[period],
                    "entry_cents": cents,
                },
            )


def _window_text(period: str) -> str:
    days = PERIOD_WINDOWS[period].days
    return "24 hours" if days == 1 else f"{days} days"


class EntryLimits:
    """Reading and changing a player's entry limits in the caller's session (the caller
    commits)."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def view(self, user_id: uuid.UUID, now: dt.datetime | None = None) -> list[PeriodLimit]:
        """Every period's limit, pending change and use at ``now`` (by default the database's),
        day, week, month."""
        if now is None:
            now = await database_now(self._session)
        rows = await _rows(self._session, user_id)
        used = await used_cents(self._session, user_id, now)
        return [self._of(period, rows.get(period), used[period], now) for period in PERIOD_WINDOWS]

    async def change(
        self,
        user_id: uuid.UUID,
        period: str,
        cents: int | None,
        cooling_off: dt.timedelta,
        now: dt.datetime | None = None,
    ) -> PeriodLimit:
        """Ask for ``cents`` (None: no limit) as the player's ``period`` limit: at once when it
        tightens the limit in force (or keeps it), after ``cooling_off`` when it loosens it;
        any pending change of the period is replaced.  Recorded as a kept change, asked at
        ``now`` (by default the database's: the start of the transaction).
        ``unknown_period`` (404)."""
        require_period(period)
        await lock_player_limits(self._session, user_id)
        if now is None:
            now = await database_now(self._session)
        row = (await _rows(self._session, user_id, fresh=True)).get(period)
        if row is None:
            row = EntryLimit(user_id=user_id, period=period, limit_cents=None)
            self._session.add(row)
        current, _ = _in_force(row, now)
        loosens = cents != current and (cents is None or (current is not None and cents > current))
        applies_at = now + cooling_off if loosens else now
        row.limit_cents = current if loosens else cents
        row.pending_cents = cents if loosens else None
        row.pending_applies_at = applies_at if loosens else None
        row.updated_at = now
        self._session.add(
            EntryLimitChange(
                user_id=user_id,
                period=period,
                cents=cents,
                requested_at=now,
                applies_at=applies_at,
                actor_id=user_id,
            )
        )
        await self._session.flush()
        used = await used_cents(self._session, user_id, now)
        return self._of(period, row, used[period], now)

    async def history(self, user_id: uuid.UUID) -> list[EntryLimitChange]:
        """Every change the player asked for, oldest first (``user_not_found``)."""
        if await self._session.get(User, user_id) is None:
            raise user_not_found(user_id=str(user_id))
        rows = await self._session.scalars(
            select(EntryLimitChange)
            .where(EntryLimitChange.user_id == user_id)
            .order_by(EntryLimitChange.id)
        )
        return list(rows)

    @staticmethod
    def _of(period: str, row: EntryLimit | None, used: int, now: dt.datetime) -> PeriodLimit:
        limit, pending = _in_force(row, now)
        return PeriodLimit(
            period=period,
            limit_cents=limit,
            pending=pending,
            pending_cents=row.pending_cents if pending and row is not None else None,
            applies_at=row.pending_applies_at if pending and row is not None else None,
            used_cents=used,
        )


def require_period(period: str) -> None:
    """``unknown_period`` (404) unless ``period`` is one of ``day``, ``week``, ``month``."""
    if period not in PERIOD_WINDOWS:
        raise NotFoundError(
            f"No entry limit period {period!r}.",
            code="unknown_period",
            details={"period": period[:32], "periods": list(PERIOD_WINDOWS)},
        )
