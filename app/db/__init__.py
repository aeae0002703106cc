"""Database access of the game service: engine, embedded PostgreSQL, ORM base."""

from __future__ import annotations

from app.db.base import GameBase, utcnow
from app.db.embedded import resolve_database_url
from app.db.engine import Database, async_url, create_engine, sync_url

__all__ = (
    "Database",
    "GameBase",
    "async_url",
    "create_engine",
    "resolve_database_url",
    "sync_url",
    "utcnow",
)
