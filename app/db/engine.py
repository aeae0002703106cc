"""The async engine and session factory shared by the API, the CLI and the scheduler."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

if TYPE_CHECKING:
    from app.config import Settings

__all__ = ("Database", "async_url", "create_engine", "sync_url")


def async_url(url: str) -> str:
    """``url`` with the asyncpg driver (accepts ``postgres://`` and ``postgresql://``)."""
    parsed = make_url(url.replace("postgres://", "postgresql://", 1))
    return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def sync_url(url: str) -> str:
    """``url`` as a plain ``postgresql://`` DSN (libpq tools, asyncpg.connect)."""
    parsed = make_url(url)
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


def create_engine(url: str, settings: Settings) -> AsyncEngine:
    """An asyncpg engine sized and time-limited by ``settings``.

    JSON and JSONB columns are decoded with ``msgspec`` (several times faster than the standard
    library, the same values for every document PostgreSQL can return: it never writes NaN,
    infinities or lone surrogates, the only inputs on which the two decoders differ).
    """
    return create_async_engine(
        async_url(url),
        json_deserializer=msgspec.json.decode,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        pool_timeout=settings.db_pool_timeout_s,
        pool_pre_ping=True,
        # A failed statement's message would quote its parameters (a deal, a password hash),
        # and failed requests log their traceback.
        hide_parameters=True,
        connect_args={
            "server_settings": {
                "application_name": "raiz",
                "statement_timeout": str(settings.db_statement_timeout_ms),
            },
        },
    )


@dataclass(slots=True)
class Database:
    """An engine plus its session factory."""

    engine: AsyncEngine
    """The connection pool."""
    sessionmaker: async_sessionmaker[AsyncSession]
    """Factory of sessions bound to ``engine``."""

    @classmethod
    def connect(cls, url: str, settings: Settings) -> Database:
        """Build the pool for ``url`` (connections open lazily)."""
        engine = create_engine(url, settings)
        return cls(engine, async_sessionmaker(engine, expire_on_commit=False))

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session closed on exit; callers commit explicitly."""
        async with self.sessionmaker() as session:
            yield session

    async def dispose(self) -> None:
        """Close every pooled connection."""
        await self.engine.dispose()
