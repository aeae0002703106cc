"""The embedded PostgreSQL used when no ``DATABASE_URL`` is configured.

``pgserver`` bundles PostgreSQL 16, runs as an unprivileged user even when started by
root, and listens on a Unix socket inside its data directory only.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
from sqlalchemy.engine import make_url

if TYPE_CHECKING:
    from app.config import Settings

__all__ = (
    "EMBEDDED_DATABASE_NAME",
    "ensure_database",
    "ensure_database_async",
    "resolve_database_url",
    "resolve_database_url_sync",
    "start_embedded",
)

EMBEDDED_DATABASE_NAME = "raiz"
"""Database created inside the embedded server."""


def start_embedded(data_dir: Path) -> str:
    """Start (or reuse) the embedded server in ``data_dir``; return its admin URL."""
    import pgserver  # imported lazily: only the embedded default needs it

    data_dir.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(data_dir, cleanup_mode=None)
    uri: str = server.get_uri()
    return uri


async def ensure_database_async(url: str) -> None:
    """Create the database named in ``url`` if the server does not have it yet."""
    parsed = make_url(url)
    name = parsed.database
    admin = parsed.set(drivername="postgresql", database="postgres")
    connection = await asyncpg.connect(admin.render_as_string(hide_password=False))
    try:
        exists = await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
        if not exists:
            await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()


def ensure_database(url: str) -> None:
    """Create the database named in ``url`` if the server does not have it yet."""
    asyncio.run(ensure_database_async(url))


def resolve_database_url_sync(settings: Settings) -> str:
    """The configured URL, or the embedded server's URL (server started on demand).

    Does not create the embedded database; callers outside an event loop use
    :func:`resolve_database_url`, the app's lifespan awaits :func:`ensure_database_async`.
    """
    if settings.database_url:
        return settings.database_url
    admin_url = make_url(start_embedded(settings.embedded_pg_dir))
    return admin_url.set(database=EMBEDDED_DATABASE_NAME).render_as_string(hide_password=False)


def resolve_database_url(settings: Settings) -> str:
    """The configured URL, or an embedded server's URL with its database created."""
    url = resolve_database_url_sync(settings)
    if not settings.database_url:
        ensure_database(url)
    return url
