"""The deadline queue table."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import BigInteger, CheckConstraint, DateTime, Index, Integer, String, func, text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import GameBase

__all__ = ("DEADLINE_STATUSES", "Deadline")

DEADLINE_STATUSES = ("pending", "fired", "stale", "failed")
"""``pending`` until handled; then ``fired`` (acted), ``stale`` (nothing to do) or
``failed`` (the handler kept raising; an operator must look, then ``raiz deadlines retry``)."""


class Deadline(GameBase):
    """A moment at which something must happen to a table unless it already moved on."""

    __tablename__ = "deadlines"
    __table_args__ = (
        CheckConstraint("status IN ('pending', 'fired', 'stale', 'failed')", name="status"),
        Index(
            "ix_deadlines_pending_due",
            "due_at",
            postgresql_where=text("status = 'pending'"),
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    table_id: Mapped[uuid.UUID] = mapped_column(index=True)
    kind: Mapped[str] = mapped_column(String(32))
    """Which handler fires it (``game``, ``deal``, ``fill``, ``abandon``, ...)."""
    token: Mapped[str] = mapped_column(String(64))
    """What the table's state must still be for the deadline to act (staleness check)."""
    due_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(String(8), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    retry_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    """After a failed attempt, when the next may run (back-off); ``None`` before any."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())
    handled_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
