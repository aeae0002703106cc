"""Alembic environment: async (asyncpg), three owned schemas, nothing else touched."""

from __future__ import annotations

import asyncio
import os

from alembic import context
from sqlalchemy import pool
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from app.db.engine import async_url
from migrations.targets import include_name, include_object, target_metadata

config = context.config
metadata = target_metadata()


def _database_url() -> str:
    url = config.attributes.get("url") or os.environ.get("DATABASE_URL")
    if not url:
        raise RuntimeError("No database URL: set DATABASE_URL or use `raiz db upgrade`.")
    return async_url(str(url))


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        include_schemas=True,
        include_name=include_name,
        include_object=include_object,
        compare_type=True,
        version_table_schema="public",
        # each migration commits on its own: one that works outside a transaction
        # (``autocommit_block``, e.g. ``game_0022``'s batches) commits only what precedes it
        transaction_per_migration=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async() -> None:
    engine = create_async_engine(_database_url(), poolclass=pool.NullPool)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
    finally:
        await engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("Offline (SQL script) migrations are not supported.")
existing = config.attributes.get("connection")
if existing is not None:
    _run(existing)
else:
    asyncio.run(_run_async())
