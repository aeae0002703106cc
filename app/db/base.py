"""Declarative base of the ``game`` schema (tables, rounds, users, deadlines)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

__all__ = ("NAMING_CONVENTION", "GameBase", "utcnow")

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
    """The current time, timezone-aware, in UTC (the service's only clock source)."""
    return dt.datetime.now(dt.UTC)
