"""Type aliases for handler parameters injected by Litestar (explicit markers)."""

from __future__ import annotations

from typing import TypeAlias

from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from app.config import Settings

__all__ = ("AppSettings", "DbSession")

DbSession: TypeAlias = NamedDependency[AsyncSession]
"""The request's database session (``db_session``); services commit explicitly."""
AppSettings: TypeAlias = NamedDependency[Settings]
"""The service settings (``settings``)."""
