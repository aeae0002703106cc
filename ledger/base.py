"""Declarative base of the ``ledger`` schema."""

from __future__ import annotations

from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

__all__ = ("NAMING_CONVENTION", "LedgerBase")

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""Constraint names are deterministic so migrations and error handling can refer to them."""


class LedgerBase(DeclarativeBase):
    """Base of every table the ledger owns (schema ``ledger``)."""

    metadata = MetaData(schema="ledger", naming_convention=NAMING_CONVENTION)
