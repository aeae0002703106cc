"""Declarative base of the ``game`` schema (tables, rounds, users, deadlines)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from sqlalchemy import MetaData, func, select
from sqlalchemy.orm import DeclarativeBase

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ("NAMING_CONVENTION", "GameBase", "database_now", "utcnow")

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""Constraint names are deterministic so migrations can refer to them."""


class GameBase(DeclarativeBase):
    """Base of every table the game service owns (schema ``game``)."""

    metadata = MetaData(schema="game", naming_convention=NAMING_CONVENTION)


def utcnow() -> dt.datetime:
    """The current time, timezone-aware, in UTC (the worker's clock: the service's clock
    source but where one moment must be the same for every worker, :func:`database_now`)."""
    return dt.datetime.now(dt.UTC)


async def database_now(session: AsyncSession) -> dt.datetime:
    """The database's ``now()``: the start of the session's transaction (starting it), the same
    for every statement of it and for every worker whatever its clock; a column defaulting to
    ``now()`` in that transaction gets exactly this value (``game.seats.seated_at``: the entry
    limits, ``app.accounts.limits``)."""
    moment: dt.datetime = (await session.execute(select(func.now()))).scalar_one()
    return moment.astimezone(dt.UTC)
