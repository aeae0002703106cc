"""The metadata of every schema the project owns, for Alembic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import MetaData

__all__ = ("OWNED_SCHEMAS", "include_name", "include_object", "target_metadata")

OWNED_SCHEMAS = ("game", "ledger", "rng")
"""Schemas created and migrated by this project; everything else is left alone."""


def target_metadata() -> list[MetaData]:
    """Metadata of all three services, with every model module imported."""
    from app.db.models import GameBase
    from ledger import models as _ledger_models  # noqa: F401 - registers the tables
    from ledger.base import LedgerBase
    from rng.models import RngBase

    metadata = [GameBase.metadata, LedgerBase.metadata, RngBase.metadata]
    return metadata


def include_name(name: str | None, type_: str, parent_names: dict[str, Any]) -> bool:
    """Reflect only our schemas: a scheduler's or an extension's tables are invisible."""
    if type_ == "schema":
        return name in OWNED_SCHEMAS
    return True


def include_object(
    obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
) -> bool:
    """Never propose dropping a table the models do not declare, even in our schemas."""
    if type_ == "table" and reflected and compare_to is None:
        owned = {table.fullname for md in target_metadata() for table in md.tables.values()}
        return f"{obj.schema}.{name}" in owned
    return True
