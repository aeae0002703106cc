"""Declarative base of the ``game`` schema (tables, rounds, users, deadlines)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from sqlalchemy import MetaData, func, select
from sqlalchemy.orm import DeclarativeBase

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = (
    "NAMING_CONVENTION",
    "GameBase",
    "database_now",
    "remember_transaction_clock",
    "transaction_clock",
    "utcnow",
)

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
    """The current time, timezone-aware, in UTC (the worker's clock: never for a moment that
    must be the same for every worker -- tables, timers, entry limits -- which take the
    database's, :func:`transaction_clock` or :func:`database_now`)."""
    return dt.datetime.now(dt.UTC)


async def database_now(session: AsyncSession) -> dt.datetime:
    """The database's ``now()``: the start of the session's transaction (starting it), the same
    for every statement of it and for every worker whatever its clock; a column defaulting to
    ``now()`` in that transaction gets exactly this value (``game.seats.seated_at``: the entry
    limits, ``app.accounts.limits``)."""
    moment: dt.datetime = (await session.execute(select(func.now()))).scalar_one()
    return moment.astimezone(dt.UTC)


_TRANSACTION_CLOCK = "raiz.transaction_clock"
"""Key in ``Session.info`` of (the transaction, its clock) (:func:`transaction_clock`)."""


async def transaction_clock(session: AsyncSession) -> dt.datetime:
    """The database's clock for the session's current transaction: ``clock_timestamp()`` read
    at the first call in the transaction (or handed over by :func:`remember_transaction_clock`
    from a query that already ran, e.g. the table's lock), then the same value for every later
    call in it; the next transaction reads it again.  Every worker thus dates a table's
    changes and arms its deadlines on one clock, whatever its own.  ``clock_timestamp()``,
    not ``now()``: read after the locks taken before it, a transaction that waited for a
    table's lock does not arm its timers from before the wait."""
    cached = _cached_clock(session)
    if cached is not None:
        return cached
    moment: dt.datetime = (await session.execute(select(func.clock_timestamp()))).scalar_one()
    return remember_transaction_clock(session, moment)


def remember_transaction_clock(session: AsyncSession, moment: dt.datetime) -> dt.datetime:
    """Keep ``moment`` (a ``clock_timestamp()`` the caller read in the session's current
    transaction) as that transaction's clock, unless it already has one; returns the
    transaction's clock."""
    cached = _cached_clock(session)
    if cached is not None:
        return cached
    moment = moment.astimezone(dt.UTC)
    session.sync_session.info[_TRANSACTION_CLOCK] = (session.sync_session.get_transaction(), moment)
    return moment


def _cached_clock(session: AsyncSession) -> dt.datetime | None:
    transaction = session.sync_session.get_transaction()
    cached = session.sync_session.info.get(_TRANSACTION_CLOCK)
    # the entry holds its transaction, so a later transaction is never the same object
    if transaction is None or cached is None or cached[0] is not transaction:
        return None
    moment: dt.datetime = cached[1]
    return moment
