"""The platform fee rate: operators change it, every change is kept, tables snapshot it."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Integer,
    String,
    func,
    select,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import GameBase
from app.errors import ValidationFailed

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ("DEFAULT_FEE_BPS", "MAX_FEE_BPS", "FeeRate", "current_fee_rate", "set_fee_rate")

MAX_FEE_BPS = 5_000
"""No fee above 50 % of the pool is accepted (a typo guard, not a business rule)."""
DEFAULT_FEE_BPS = 1_000
"""The rate in force before any operator sets one (10 %), inserted by the migration."""


class FeeRate(GameBase):
    """One change of the platform fee; the newest row is the rate in force."""

    __tablename__ = "fee_rates"
    __table_args__ = (CheckConstraint(f"fee_bps BETWEEN 0 AND {MAX_FEE_BPS}", name="fee_bps"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    fee_bps: Mapped[int] = mapped_column(Integer)
    """Basis points of the prize pool kept by the house (1,000 = 10 %)."""
    set_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id"))
    """The operator who set it (None for the initial rate)."""
    reason: Mapped[str] = mapped_column(String(200), default="")
    set_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())


async def current_fee_rate(session: AsyncSession) -> FeeRate:
    """The rate in force now (the newest change)."""
    rate = await session.scalar(select(FeeRate).order_by(FeeRate.id.desc()).limit(1))
    if rate is None:  # the migration inserts the initial rate; this is a broken database
        raise RuntimeError("game.fee_rates is empty")
    return rate


async def set_fee_rate(
    session: AsyncSession, fee_bps: int, operator_id: uuid.UUID, reason: str
) -> FeeRate:
    """Record a new rate; it applies to tables created from now on. Does not commit."""
    if not 0 <= fee_bps <= MAX_FEE_BPS:
        raise ValidationFailed(
            f"fee_bps must be between 0 and {MAX_FEE_BPS}.",
            code="invalid_fee_rate",
            details={"fee_bps": fee_bps},
        )
    rate = FeeRate(fee_bps=fee_bps, set_by=operator_id, reason=reason)
    session.add(rate)
    await session.flush()
    return rate


async def fee_rate_history(session: AsyncSession, *, limit: int) -> list[FeeRate]:
    """Changes, newest first."""
    return list(await session.scalars(select(FeeRate).order_by(FeeRate.id.desc()).limit(limit)))
