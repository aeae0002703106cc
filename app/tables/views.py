"""What the API shows of a table: to its players, to spectators, in listings."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from app.accounts.models import User
from app.tables.hosting import game_for_preset
from app.tables.models import Round, Seat, Table
from app.tables.service import net_prize_cents

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ("table_summary", "table_view")


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


async def table_view(
    session: AsyncSession, table: Table, viewer_id: uuid.UUID | None
) -> dict[str, Any]:
    """The table as ``viewer_id`` may see it: their own hand if they play, public otherwise."""
    rows = (
        await session.execute(
            select(Seat, User.username)
            .join(User, User.id == Seat.user_id)
            .where(Seat.table_id == table.id, Seat.left_at.is_(None))
            .order_by(Seat.position)
        )
    ).all()
    seats = [
        {
            "position": seat.position,
            "match_seat": seat.engine_seat,
            "user_id": str(seat.user_id),
            "username": username,
        }
        for seat, username in rows
    ]
    viewer_seat = next(
        (
            seat.engine_seat
            for seat, _ in rows
            if viewer_id is not None and seat.user_id == viewer_id
        ),
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
    if table.round_number:
        current = await session.scalar(
            select(Round).where(Round.table_id == table.id, Round.number == table.round_number)
        )
        if current is not None:
            view["round"] = {
                "number": current.number,
                "id": str(current.id),
                "rng_round_id": str(current.rng_round_id),
                "commitment": current.commitment,
                "rng_version": current.rng_version,
            }
    return view
