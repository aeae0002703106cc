"""What the API shows of a table: to its players, to spectators, in listings."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, select

from app.accounts.models import User
from app.tables.hosting import game_for_preset
from app.tables.models import Round, Seat, Table
from app.tables.service import net_prize_cents

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ("TableSnapshot", "read_table", "render_view", "table_summary", "table_view")

# Built once (a view is rendered for every socket after every change): only the columns a
# view shows, so no ORM objects and no round snapshot are loaded, and no statement is
# rebuilt per call.
_SEATS = (
    select(Seat.position, Seat.engine_seat, Seat.user_id, User.username)
    .join(User, User.id == Seat.user_id)
    .where(Seat.table_id == bindparam("table_id"), Seat.left_at.is_(None))
    .order_by(Seat.position)
)
_CURRENT_ROUND = select(
    Round.number, Round.id, Round.rng_round_id, Round.commitment, Round.rng_version
).where(Round.table_id == bindparam("table_id"), Round.number == bindparam("number"))


def _money(table: Table, paid_seats: int) -> dict[str, Any]:
    pool = table.entry_cents * paid_seats
    return {
        "currency": table.currency,
        "entry_cents": table.entry_cents,
        "pool_cents": pool,
        "fee_bps": table.fee_bps,
        "fee_cents": pool - net_prize_cents(pool, table.fee_bps),
        "net_prize_cents": net_prize_cents(pool, table.fee_bps),
        "net_prize_if_full_cents": net_prize_cents(
            table.entry_cents * table.seat_count, table.fee_bps
        ),
    }


def table_summary(table: Table, seated: int) -> dict[str, Any]:
    """A table in a listing: what it costs and what the winner gets at its fee snapshot."""
    return {
        "id": str(table.id),
        "game": table.game,
        "preset": table.preset,
        "status": table.status,
        "seat_count": table.seat_count,
        "seated": seated,
        "lives": table.options.get("lives"),
        "fill_deadline_at": table.fill_deadline_at.isoformat(),
        "created_at": table.created_at.isoformat(),
        **_money(table, seated),
    }


@dataclass(frozen=True, slots=True)
class TableSnapshot:
    """What any view of a table shows, read once: the table, its seats, its round."""

    table: Table
    seats: Sequence[Any]
    """Occupied seats in chair order (rows: position, engine_seat, user_id, username)."""
    current_round: Any
    """The round in play (a row: number, id, rng_round_id, commitment, rng_version), or
    ``None`` before the first round."""


async def read_table(session: AsyncSession, table: Table) -> TableSnapshot:
    """Everything :func:`render_view` needs besides ``table`` (two queries)."""
    seats = (await session.execute(_SEATS, {"table_id": table.id})).all()
    current = None
    if table.round_number:
        current = (
            await session.execute(
                _CURRENT_ROUND, {"table_id": table.id, "number": table.round_number}
            )
        ).first()
    return TableSnapshot(table, seats, current)


async def table_view(
    session: AsyncSession, table: Table, viewer_id: uuid.UUID | None
) -> dict[str, Any]:
    """The table as ``viewer_id`` may see it: their own hand if they play, public otherwise."""
    return render_view(await read_table(session, table), viewer_id)


def render_view(snapshot: TableSnapshot, viewer_id: uuid.UUID | None) -> dict[str, Any]:
    """The view of ``snapshot`` for ``viewer_id`` (pure: one snapshot serves every viewer)."""
    table, rows = snapshot.table, snapshot.seats
    seats = [
        {
            "position": row.position,
            "match_seat": row.engine_seat,
            "user_id": str(row.user_id),
            "username": row.username,
        }
        for row in rows
    ]
    viewer_seat = next(
        (row.engine_seat for row in rows if viewer_id is not None and row.user_id == viewer_id),
        None,
    )
    view: dict[str, Any] = {
        **table_summary(table, len(rows)),
        "step": table.step,
        "seats": seats,
        "you": {"match_seat": viewer_seat, "spectator": viewer_seat is None},
        "frozen": table.frozen_at is not None,
        "timer": (
            {"kind": table.timer_kind, "due_at": table.timer_due_at.isoformat()}
            if table.timer_kind and table.timer_due_at
            else None
        ),
        "result": table.result,
        "round": None,
        "game_view": None,
        "events": [],
    }
    spec = game_for_preset(table.preset)
    if table.match_state is not None and spec is not None:
        match = spec.restore(table.match_state)
        view["game_view"] = (
            spec.player_view(match, viewer_seat)
            if viewer_seat is not None
            else spec.spectator_view(match)
        )
        events = [spec.event_from_dict(event) for event in table.last_events or []]
        view["events"] = spec.visible_events(events, viewer_seat)
    current = snapshot.current_round
    if current is not None:
        view["round"] = {
            "number": current.number,
            "id": str(current.id),
            "rng_round_id": str(current.rng_round_id),
            "commitment": current.commitment,
            "rng_version": current.rng_version,
        }
    return view
