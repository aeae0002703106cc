"""Table operations: create, list, seat (debit), leave and cancel (refund), start, act.

Each public method is one database transaction that locks the table row first, so every
change of one table is serialized across requests, timers and workers.  A refusal raises
an :class:`~app.errors.AppError` before anything is committed (the caller's session is
rolled back), so a refused request changes nothing.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import aliased

from app.accounts.limits import lock_player_limits, require_within_limits
from app.accounts.suspension import any_suspended, require_active
from app.db.base import remember_transaction_clock, transaction_clock
from app.db.paging import CreationOrder
from app.errors import (
    ConflictError,
    ForbiddenError,
    NotFoundError,
    UnprocessableError,
    ValidationFailed,
)
from app.games.errors import GameError
from app.metrics import count_on_commit
from app.tables import metrics
from app.tables.creation import create_table
from app.tables.driver import TableDriver
from app.tables.errors import from_game_error
from app.tables.hosting import GameSpec, game_for_preset
from app.tables.models import Presence, Seat, Table, TableAction
from app.tables.roundlog import canonical_json
from ledger.settlement import split_settlement

if TYPE_CHECKING:
    import datetime as dt

    from sqlalchemy import Select
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.accounts.service import Principal
    from app.tables.context import TableContext

__all__ = ("TableService", "lock_table", "net_prize_cents")

LOBBY_ORDER = CreationOrder(Table.created_at, Table.id, newest_first=True)
"""The order of table listings: latest created first, ties by id."""

# Built once: every action runs them.
_ENGINE_SEAT = select(Seat.engine_seat).where(
    Seat.table_id == bindparam("table_id"),
    Seat.user_id == bindparam("user_id"),
    Seat.left_at.is_(None),
)
_SEEN = insert(Presence).values(
    table_id=bindparam("table_id"), user_id=bindparam("user_id"), last_seen_at=func.now()
)
_TOUCH = _SEEN.on_conflict_do_update(
    index_elements=[Presence.table_id, Presence.user_id],
    set_={"last_seen_at": _SEEN.excluded.last_seen_at},
)
_ACTED = insert(Presence).values(
    table_id=bindparam("table_id"),
    user_id=bindparam("user_id"),
    last_seen_at=func.now(),
    timeouts_in_a_row=0,
    acted_at=func.now(),
)
_TOUCH_ACTED = _ACTED.on_conflict_do_update(
    index_elements=[Presence.table_id, Presence.user_id],
    set_={
        "last_seen_at": _ACTED.excluded.last_seen_at,
        "timeouts_in_a_row": 0,
        "acted_at": _ACTED.excluded.acted_at,
    },
)


def _locked(skip_locked: bool) -> Select[Table, dt.datetime]:
    locked = aliased(
        Table,
        select(Table)
        .where(Table.id == bindparam("table_id"))
        .with_for_update(skip_locked=skip_locked)
        .subquery("locked"),
    )
    return select(locked, func.clock_timestamp())


_LOCKED = {skip: _locked(skip) for skip in (False, True)}
"""Built once (every action locks its table): by ``skip_locked``."""


async def lock_table(
    session: AsyncSession, table_id: uuid.UUID, *, skip_locked: bool = False
) -> Table | None:
    """The table row locked until the transaction ends (``None``: no such table, or locked
    elsewhere with ``skip_locked``), and the transaction's clock read once it is locked
    (``transaction_clock``): the lock is a sub-select, so ``clock_timestamp()`` is evaluated
    above it, after any wait for the lock (in the lock's own select list it is evaluated
    before the wait when the holder did not change the row)."""
    row = (await session.execute(_LOCKED[skip_locked], {"table_id": table_id})).first()
    if row is None:
        return None
    table, moment = row
    remember_transaction_clock(session, moment)
    return table


def net_prize_cents(pool_cents: int, fee_bps: int) -> int:
    """What the winner receives from ``pool_cents`` at ``fee_bps``: the settlement's own
    arithmetic (:func:`ledger.settlement.split_settlement`, fee rounded down), one winner."""
    return split_settlement(pool_cents, fee_bps, 1)[1][0]


class TableService:
    """Table operations for one request (or one timer) in one transaction."""

    def __init__(self, context: TableContext) -> None:
        self._context = context
        self._session = context.session

    # --- reading -----------------------------------------------------------------------------
    async def get(self, table_id: uuid.UUID) -> Table:
        """A table by id (``table_not_found``)."""
        table = await self._session.get(Table, table_id)
        if table is None:
            raise NotFoundError("No such table.", code="table_not_found")
        return table

    async def lock(self, table_id: uuid.UUID) -> Table:
        """The table row, locked until the transaction ends (and the transaction's clock read
        with it: :func:`lock_table`)."""
        table = await lock_table(self._session, table_id)
        if table is None:
            raise NotFoundError("No such table.", code="table_not_found")
        return table

    async def active_seats(self, table_id: uuid.UUID) -> list[Seat]:
        """Occupied seats in chair order."""
        rows = await self._session.scalars(
            select(Seat)
            .where(Seat.table_id == table_id, Seat.left_at.is_(None))
            .order_by(Seat.position)
        )
        return list(rows)

    async def list_tables(
        self,
        *,
        status: str | None,
        limit: int,
        offset: int = 0,
        before: uuid.UUID | None = None,
    ) -> list[tuple[Table, int]]:
        """Tables (newest first) with their occupied-seat counts; after the table ``before``
        in that order when given (``table_not_found`` if there is no such table).  The
        anchor is looked up by id alone, whatever ``status`` asks for: a table's place in
        the order never changes, while its status does (the last open table of a page may
        be running by the next one, and the next page still starts after it)."""
        page = select(Table.id, Table.created_at)
        if status is not None:
            page = page.where(Table.status == status)
        if before is not None:
            missing = NotFoundError(
                "No table with this id to page from.",
                code="table_not_found",
                details={"before": str(before)},
            )
            page = page.where(await LOBBY_ORDER.after_row(self._session, before, missing))
        chosen = page.order_by(*LOBBY_ORDER.order_by()).limit(limit).offset(offset).subquery()
        # Seats are counted for the page's tables only (``ix_seats_table_id``): grouping every
        # seat ever taken made each listing read the whole seats table.
        seated = (
            select(func.count())
            .where(Seat.table_id == chosen.c.id, Seat.left_at.is_(None))
            .correlate(chosen)
            .scalar_subquery()
        )
        query = (
            select(Table, seated)
            .join(chosen, chosen.c.id == Table.id)
            .order_by(chosen.c.created_at.desc(), chosen.c.id)
        )
        return [(table, int(count)) for table, count in (await self._session.execute(query))]

    # --- creating ----------------------------------------------------------------------------
    async def create(
        self,
        creator: Principal,
        *,
        preset: str,
        seat_count: int,
        entry_cents: int,
        fill_deadline_s: int,
        options: Mapping[str, Any],
    ) -> Table:
        """A new open table (``app.tables.creation``)."""
        return await create_table(
            self._context,
            creator,
            preset=preset,
            seat_count=seat_count,
            entry_cents=entry_cents,
            fill_deadline_s=fill_deadline_s,
            options=options,
        )

    # --- seats -------------------------------------------------------------------------------
    async def seat(self, principal: Principal, table_id: uuid.UUID) -> Seat:
        """Take a seat and pay the entry, in one transaction (never one without the other)."""
        await require_active(self._session, principal.user_id)  # before the table's lock
        # a table's entry never changes: a paid seat takes the player's limits lock before
        # the table's (``app.accounts.limits``), then checks once the table takes the seat
        if await self._session.scalar(select(Table.entry_cents).where(Table.id == table_id)):
            await lock_player_limits(self._session, principal.user_id)
        table = await self.lock(table_id)
        if table.status != "running":
            self._require_open(table)
        seats = await self.active_seats(table.id)
        if any(seat.user_id == principal.user_id for seat in seats):
            raise ConflictError("You already sit at this table.", code="already_seated")
        if len(seats) >= table.seat_count:
            raise ConflictError("The table is full.", code="table_full")
        self._require_open(table)
        await self._require_fill_time(table)
        # the check's window ends at the database's now(), the seat's seating time below
        await require_within_limits(self._session, principal.user_id, table.entry_cents)
        taken = {seat.position for seat in seats}
        position = next(index for index in range(table.seat_count) if index not in taken)
        seat = Seat(
            table_id=table.id,
            user_id=principal.user_id,
            position=position,
            entry_cents=table.entry_cents,
        )
        self._session.add(seat)
        await self._session.flush()
        if table.entry_cents > 0:
            seat.entry_transfer_id = f"entry:{table.id}:{seat.id}"
            await self._context.ledger.take_entry(
                seat.entry_transfer_id,
                principal.user_id,
                table.id,
                table.entry_cents,
                {"seat": seat.id},
            )
            count_on_commit(self._session, metrics.ENTRY_CENTS, table.entry_cents)
        await self.touch(table.id, principal.user_id)
        seats.append(seat)
        driver = TableDriver(self._context, table, self._spec(table))
        await self._start_if_full(driver, seats)
        await driver.save()
        return seat

    async def start_full(self, table_id: uuid.UUID) -> bool:
        """Start an open table whose every seat is taken, as its last seat would have
        (``app.tables.suspended``: a table filled while a seated account was suspended, whose
        account was reinstated before its seat was given up); False when it did not start."""
        table = await self.lock(table_id)
        if table.status != "open":
            return False
        if await transaction_clock(self._session) >= table.fill_deadline_at:
            return False
        driver = TableDriver(self._context, table, self._spec(table))
        if not await self._start_if_full(driver, await self.active_seats(table.id)):
            return False
        await driver.save()
        return True

    async def _start_if_full(self, driver: TableDriver, seats: Sequence[Seat]) -> bool:
        """Start the match of a locked open table when every seat is taken, unless a seated
        account is suspended: the table waits (its seat is being given up:
        ``app.tables.suspended``) instead of dealing it in."""
        if len(seats) < driver.table.seat_count or await any_suspended(
            self._session, [seat.user_id for seat in seats]
        ):
            return False
        await self._start(driver, seats)
        return True

    async def leave(self, principal: Principal, table_id: uuid.UUID) -> None:
        """Leave before the start; the entry comes back in full."""
        table = await self.lock(table_id)
        self._require_open(table)
        if not await self._give_up_seat(table, principal.user_id):
            raise ConflictError("You do not sit at this table.", code="not_seated")

    async def give_up_seat(self, table_id: uuid.UUID, user_id: uuid.UUID) -> bool:
        """A suspended player's seat at a table that has not started is given up and its entry
        refunded (``app.tables.suspended``); False when there is none (or the table started)."""
        table = await self.lock(table_id)
        return table.status == "open" and await self._give_up_seat(table, user_id)

    async def _give_up_seat(self, table: Table, user_id: uuid.UUID) -> bool:
        seats = await self.active_seats(table.id)
        seat = next((seat for seat in seats if seat.user_id == user_id), None)
        if seat is None:
            return False
        await self._refund(table, seat)
        await TableDriver(self._context, table, self._spec(table)).save()
        return True

    async def _refund(self, table: Table, seat: Seat) -> None:
        seat.left_at = await transaction_clock(self._session)
        if seat.entry_transfer_id is not None:
            seat.refund_transfer_id = f"refund:{table.id}:{seat.id}"
            await self._context.ledger.refund_entry(seat.refund_transfer_id, seat.entry_transfer_id)
            count_on_commit(self._session, metrics.REFUND_CENTS, table.entry_cents)

    async def cancel(self, principal: Principal | None, table_id: uuid.UUID, reason: str) -> Table:
        """Cancel an open table and refund every entry (creator or operator; or the timer)."""
        table = await self.lock(table_id)
        self._require_open(table)
        if principal is not None and not (
            principal.role == "operator" or principal.user_id == table.creator_id
        ):
            raise ForbiddenError(
                "Only the creator or an operator can cancel a table.", code="not_creator"
            )
        await self.cancel_locked(table, reason)
        return table

    async def cancel_locked(self, table: Table, reason: str) -> None:
        """Refund everyone and close the escrow of a locked open table."""
        # One refund per seat, each locking the escrow and that player's wallet: taken in
        # wallet id order (the ledger's lock order), two cancellations sharing players lock
        # their wallets in the same order and cannot deadlock.
        wallet_id = self._context.ledger.wallet_id
        seats = await self.active_seats(table.id)
        for seat in sorted(seats, key=lambda seat: wallet_id(seat.user_id)):
            await self._refund(table, seat)
        await self._context.ledger.close_escrow(table.id)
        table.status = "cancelled"
        table.ended_at = await transaction_clock(self._session)
        table.result = {"reason": reason}
        driver = TableDriver(self._context, table, self._spec(table))
        await driver.save()

    async def start(self, principal: Principal, table_id: uuid.UUID) -> Table:
        """The creator starts the match early with at least the minimum of players."""
        table = await self.lock(table_id)
        self._require_open(table)
        if principal.user_id != table.creator_id:
            raise ForbiddenError("Only the creator can start the table.", code="not_creator")
        await self._require_fill_time(table)
        seats = await self.active_seats(table.id)
        spec = self._spec(table)
        minimum = spec.min_players(spec.options_from_dict(table.options))
        if len(seats) < minimum:
            raise UnprocessableError(
                f"At least {minimum} players must sit before the start.",
                code="not_enough_players",
                details={"seated": len(seats), "minimum": minimum},
            )
        if await any_suspended(self._session, [seat.user_id for seat in seats]):
            raise ConflictError(
                "A seated player's account is suspended; their seat is being given up.",
                code="seated_account_suspended",
            )
        driver = TableDriver(self._context, table, spec)
        await self._start(driver, seats)
        await driver.save()
        return table

    async def _start(self, driver: TableDriver, seats: Sequence[Seat]) -> None:
        await driver.start(seats)

    # --- play --------------------------------------------------------------------------------
    async def act(
        self,
        principal: Principal,
        table_id: uuid.UUID,
        action_id: str,
        action: Mapping[str, Any],
    ) -> tuple[Table, bool]:
        """Apply a player's action once; a retried ``action_id`` is answered, not re-applied.

        Returns the table and whether the action was a replay.
        """
        try:
            request_bytes = canonical_json(dict(action))
        except TypeError:
            # every field of an action is an integer, a string, a boolean or a list of them
            raise ValidationFailed(
                "An action holds no numbers with a fraction or exponent.",
                code="invalid_action",
            ) from None
        table = await self.lock(table_id)
        request_hash = hashlib.sha256(request_bytes).digest()
        previous = await self._session.get(TableAction, (table.id, principal.user_id, action_id))
        if previous is not None:
            if previous.request_sha256 != request_hash:
                raise ConflictError(
                    "This action id was used for a different action.",
                    code="idempotency_conflict",
                    details={"action_id": action_id},
                )
            metrics.ACTIONS.labels(str(action.get("type")), "replayed").inc()
            return table, True
        if table.status != "running":
            raise ConflictError(
                "The match is not running.",
                code="table_not_running",
                details={"status": table.status},
            )
        spec = self._spec(table)
        kind = action.get("type")
        if not isinstance(kind, str) or kind not in spec.player_actions:
            # timeouts, abandon wins and chance inputs come from timers and the service only
            raise ValidationFailed(
                f"Unknown action type {kind!r}.",
                code="unknown_action",
                details={"allowed": sorted(spec.player_actions)},
            )
        if "seat" in action:
            raise ValidationFailed(
                "The seat comes from your token, not the request.", code="invalid_action"
            )
        seat = await self._engine_seat(table, principal.user_id)
        record = {**action, "seat": seat}
        driver = TableDriver(self._context, table, spec)
        try:
            await driver.apply_input(
                record,
                {"user": str(principal.user_id), "action_id": action_id},
            )
        except GameError as error:
            metrics.ACTIONS.labels(str(action.get("type")), "refused").inc()
            raise from_game_error(error) from None
        await driver.save()
        self._session.add(
            TableAction(
                table_id=table.id,
                user_id=principal.user_id,
                action_id=action_id,
                request_sha256=request_hash,
                step=table.step,
            )
        )
        await self.touch(table.id, principal.user_id, acted=True)
        count_on_commit(self._session, metrics.ACTIONS.labels(str(kind), "applied"))
        return table, False

    async def add_client_seed(
        self, principal: Principal, table_id: uuid.UUID, client_seed: bytes
    ) -> None:
        """Mix a player's own seed into the next deal (only before that deal).

        Only a player still in the match contributes: an eliminated player keeps their seat
        (to watch) but is dealt no cards, so their seed is refused (``seat_eliminated``)
        before anything is written.  One seed per seat and round (``already_contributed``).
        """
        table = await self.lock(table_id)
        if table.status != "running" or table.round_number == 0:
            raise ConflictError("No round is waiting for its deal.", code="no_round_pending")
        seat = await self._engine_seat(table, principal.user_id)
        driver = TableDriver(self._context, table, self._spec(table))
        if seat not in driver.spec.alive_seats(driver.match):
            raise ConflictError(
                "You are out of the match: your seed would shape rounds you do not play.",
                code="seat_eliminated",
                details={"seat": seat},
            )
        round_ = await driver.current_round()
        await self._context.rng.add_client_seed(
            round_.rng_round_id, f"seat:{seat:02d}", client_seed
        )
        # Logged for the replay, but no view shows client seeds: the table's step, last events
        # and timer stay as they are (no save, nobody woken).
        await driver.note({"type": "client_seed", "seat": seat, "client_seed": client_seed.hex()})

    async def heartbeat(self, principal: Principal, table_id: uuid.UUID) -> None:
        """A seated player of an open or running table says they are still here."""
        table = await self.get(table_id)
        if table.status not in ("open", "running"):
            raise ConflictError(
                f"The table is {table.status}.",
                code="table_closed",
                details={"status": table.status},
            )
        seated = await self._session.scalar(
            select(Seat.id).where(
                Seat.table_id == table.id,
                Seat.user_id == principal.user_id,
                Seat.left_at.is_(None),
            )
        )
        if seated is None:
            raise ForbiddenError("You do not sit at this table.", code="not_seated")
        await self.touch(table.id, principal.user_id)

    async def touch(self, table_id: uuid.UUID, user_id: uuid.UUID, *, acted: bool = False) -> None:
        """Record that a player is present now (WebSocket, heartbeat or action); an action
        (``acted``) also ends their run of timeouts (``RAIZ_AWAY_AFTER_TIMEOUTS``).  Dated by
        the database's ``now()`` in the statement (no round trip for a heartbeat), which the
        presence sweep compares with its own ``now()``."""
        await self._session.execute(
            _TOUCH_ACTED if acted else _TOUCH, {"table_id": table_id, "user_id": user_id}
        )

    # --- helpers -----------------------------------------------------------------------------
    async def _engine_seat(self, table: Table, user_id: uuid.UUID) -> int:
        seat = await self._session.scalar(_ENGINE_SEAT, {"table_id": table.id, "user_id": user_id})
        if seat is None:
            raise ForbiddenError("You do not play at this table.", code="not_seated")
        return int(seat)

    def _spec(self, table: Table) -> GameSpec:
        spec = game_for_preset(table.preset)
        if spec is None:  # a table is only created for a playable preset
            raise RuntimeError(f"no game hosts preset {table.preset}")
        return spec

    async def _require_fill_time(self, table: Table) -> None:
        """A table that did not fill before its deadline is cancelled and refunded (its
        ``fill`` timer does it): until that timer runs, it takes no seat and does not start.
        The database's clock judges, as the timer's does: a worker whose clock runs ahead
        does not refuse a seat before the deadline."""
        if await transaction_clock(self._session) >= table.fill_deadline_at:
            raise ConflictError(
                "The table did not fill before its deadline; it is being cancelled.",
                code="fill_deadline_passed",
                details={"fill_deadline_at": table.fill_deadline_at.isoformat()},
            )

    @staticmethod
    def _require_open(table: Table) -> None:
        if table.status == "running":
            raise ConflictError("The match has already started.", code="table_started")
        if table.status != "open":
            raise ConflictError(
                f"The table is {table.status}.",
                code="table_closed",
                details={"status": table.status},
            )
