"""Tables of the table context: tables, seats, rounds and their logs, actions, presence.

Rounds, round logs and round results are insert-only (database triggers refuse UPDATE
and DELETE): a committed round is never changed in place.  The ``tables`` row holds the
live state of a running match (a cache of the log, rebuilt by replay) and is updated by
every action; its game, options, seat count, entry, currency, fee snapshot, creator and
creation time, and a seat's table, owner, chair, seating time and entry, never change (triggers
of migrations ``game_0008`` and ``game_0022``); a seat's match seat, transfers and leaving time
are written once.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    String,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import GameBase

__all__ = (
    "TABLE_STATUSES",
    "Presence",
    "Round",
    "RoundLogEntry",
    "RoundResult",
    "Seat",
    "Table",
    "TableAction",
)

TABLE_STATUSES = ("open", "running", "finished", "cancelled")
"""``open`` (filling), ``running`` (match in play), ``finished`` (paid), ``cancelled``
(refunded)."""


class Table(GameBase):
    """An entry table hosting one match of one game preset."""

    __tablename__ = "tables"
    __table_args__ = (
        CheckConstraint("status IN ('open', 'running', 'finished', 'cancelled')", name="status"),
        CheckConstraint("entry_cents >= 0", name="entry_cents"),
        CheckConstraint("seat_count BETWEEN 2 AND 10", name="seat_count"),
        Index("ix_tables_status_created", "status", "created_at"),
        Index("ix_tables_open_by_creator", "creator_id", postgresql_where=text("status = 'open'")),
        Index("ix_tables_created_at", "created_at"),
        Index("ix_tables_creator_created_at", "creator_id", "created_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    game: Mapped[str] = mapped_column(String(16))
    """Which engine hosts the match (``cacheta``)."""
    preset: Mapped[str] = mapped_column(String(32))
    options: Mapped[dict[str, Any]] = mapped_column(JSONB)
    """Every option value the preset resolved to, recorded at creation, never changed."""
    seat_count: Mapped[int] = mapped_column(Integer)
    entry_cents: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3), default="BRL")
    fee_bps: Mapped[int] = mapped_column(Integer)
    """Snapshot of the platform fee rate at creation."""
    fee_rate_id: Mapped[int] = mapped_column(ForeignKey("fee_rates.id"))
    creator_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"))
    status: Mapped[str] = mapped_column(String(10), default="open")
    fill_deadline_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    abandon_after_s: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    step: Mapped[int] = mapped_column(Integer, default=0)
    """Bumped by every change of the live state that more than its author can see (a secret
    decision or a claim leaves it as it is: ``TableDriver.save``); clients use it as a
    version."""
    match_state: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    """Snapshot of the running match (rebuildable from the round logs)."""
    round_number: Mapped[int] = mapped_column(Integer, default=0)
    last_events: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, default=list)
    """Engine events of the latest change (every watcher filters them for its viewer)."""
    frozen_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    """Set while the table waits for disconnected players (timers paused)."""
    frozen_keeper_seat: Mapped[int | None] = mapped_column(Integer)
    """The match seat that stayed connected when the table froze (wins on abandon)."""
    timer_kind: Mapped[str | None] = mapped_column(String(32))
    """The running timer (``turn``, ``deal``, ``claim_window``...), for clients."""
    timer_due_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    """Winner, placements and payouts (finished) or the reason (cancelled)."""


class Seat(GameBase):
    """A player's seat, paid by one ledger transfer, refunded by another if they leave."""

    __tablename__ = "seats"
    __table_args__ = (
        Index(
            "uq_seats_table_user_active",
            "table_id",
            "user_id",
            unique=True,
            postgresql_where=text("left_at IS NULL"),
        ),
        Index(
            "uq_seats_table_position_active",
            "table_id",
            "position",
            unique=True,
            postgresql_where=text("left_at IS NULL"),
        ),
        CheckConstraint("entry_cents >= 0", name="entry_cents"),
        # a player's paid, unrefunded entries within a window, read from this index alone
        # (``app.accounts.limits.used_cents``; migration ``game_0022``)
        Index(
            "ix_seats_paid_by_user",
            "user_id",
            "seated_at",
            postgresql_include=["entry_cents"],
            postgresql_where=text("entry_transfer_id IS NOT NULL AND refund_transfer_id IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    table_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tables.id"), index=True)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    """Chair around the table (0-based); seat order in the match follows it."""
    engine_seat: Mapped[int | None] = mapped_column(Integer)
    """The player's index in the match, assigned at the start."""
    entry_cents: Mapped[int] = mapped_column(BigInteger)
    """The entry the seat paid: its table's (0 at a free table), fixed once inserted (a trigger
    refuses another value, ``game_0022``); what the entry limits sum."""
    entry_transfer_id: Mapped[str | None] = mapped_column(String(128))
    refund_transfer_id: Mapped[str | None] = mapped_column(String(128))
    seated_at: Mapped[dt.datetime] = mapped_column(
        DateTime(timezone=True), server_default=text("now()")
    )
    """The database's ``now()`` of the seat's transaction (never a worker's clock): the moment
    the entry limits date the entry by, read by their check in the same transaction."""
    left_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class Round(GameBase):
    """One deal of a match: its committed seed and the state it started from (immutable)."""

    __tablename__ = "rounds"
    __table_args__ = (
        UniqueConstraint("table_id", "number"),
        # the compliance search, newest first (ties by id: an incremental sort of a few rows)
        Index("ix_rounds_created_at", "created_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    table_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tables.id"))
    number: Mapped[int] = mapped_column(Integer)
    rng_round_id: Mapped[uuid.UUID] = mapped_column(unique=True)
    """The RNG service's round (seed, commitment, client seeds, reveal)."""
    commitment: Mapped[str] = mapped_column(String(64))
    rng_version: Mapped[str] = mapped_column(String(32))
    start_state: Mapped[dict[str, Any]] = mapped_column(JSONB)
    """Match snapshot before the deal; replay starts here."""
    start_state_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())


class RoundLogEntry(GameBase):
    """One link of a round's hash chain: an input, a chance outcome or an engine event."""

    __tablename__ = "round_log"
    __table_args__ = (
        PrimaryKeyConstraint("round_id", "seq"),
        CheckConstraint("kind IN ('input', 'chance', 'event', 'note')", name="kind"),
    )

    round_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("rounds.id"))
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(8))
    body: Mapped[dict[str, Any]] = mapped_column(JSONB)
    hash: Mapped[bytes] = mapped_column(LargeBinary(32))
    """SHA-256(previous hash ‖ canonical bytes of {seq, kind, body})."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())


class RoundResult(GameBase):
    """How a round ended (immutable): final state hash, lives, reveal."""

    __tablename__ = "round_results"

    round_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("rounds.id"), primary_key=True)
    final_state_hash: Mapped[str] = mapped_column(String(64))
    last_hash: Mapped[bytes] = mapped_column(LargeBinary(32))
    """Hash of the last log entry: seals the chain's length."""
    entries: Mapped[int] = mapped_column(Integer)
    summary: Mapped[dict[str, Any]] = mapped_column(JSONB)
    ended_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())


class TableAction(GameBase):
    """A player's action id, so a retried request is answered, not applied twice."""

    __tablename__ = "table_actions"
    __table_args__ = (PrimaryKeyConstraint("table_id", "user_id", "action_id"),)

    table_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tables.id"))
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"))
    action_id: Mapped[str] = mapped_column(String(64))
    request_sha256: Mapped[bytes] = mapped_column(LargeBinary(32))
    step: Mapped[int] = mapped_column(Integer)
    """The table's step after the action."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())


class Presence(GameBase):
    """When a seated player was last seen (WebSocket open, heartbeat or action) and last acted,
    and how many of their timers ran out since (``RAIZ_AWAY_AFTER_TIMEOUTS``)."""

    __tablename__ = "presence"
    __table_args__ = (
        PrimaryKeyConstraint("table_id", "user_id"),
        CheckConstraint("timeouts_in_a_row >= 0", name="timeouts_in_a_row_not_negative"),
    )

    table_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tables.id"))
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"))
    last_seen_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    timeouts_in_a_row: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """The timers that waited for this player and ran out since their last action here."""
    acted_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    """The player's last action at this table."""
