"""Migrations: up from an empty database, models match them, foreign tables are left alone."""

from __future__ import annotations

import anyio
import asyncpg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from app.db.engine import async_url
from app.db.migrate import alembic_config, upgrade
from migrations.targets import OWNED_SCHEMAS, include_name, include_object, target_metadata

pytestmark = pytest.mark.asyncio


async def _diff(url) -> list:
    """Alembic's autogenerate diff between the models and the database at ``url``."""

    def compare(connection) -> list:
        context = MigrationContext.configure(
            connection,
            opts={
                "include_schemas": True,
                "include_name": include_name,
                "include_object": include_object,
                "compare_type": True,
                "target_metadata": target_metadata(),
            },
        )
        return list(compare_metadata(context, target_metadata()))

    engine = create_async_engine(async_url(url.render_as_string(hide_password=False)))
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(compare)
    finally:
        await engine.dispose()


async def test_upgrade_from_empty_creates_every_schema_and_matches_the_models(empty_database):
    url = empty_database
    await anyio.to_thread.run_sync(upgrade, url)
    connection = await asyncpg.connect(url)
    try:
        schemas = {
            row["nspname"] for row in await connection.fetch("SELECT nspname FROM pg_namespace")
        }
        tables = {
            f"{row['schemaname']}.{row['tablename']}"
            for row in await connection.fetch("SELECT schemaname, tablename FROM pg_tables")
        }
        heads = {
            row["version_num"]
            for row in await connection.fetch("SELECT version_num FROM public.alembic_version")
        }
    finally:
        await connection.close()
    expected_tables = {t.fullname for md in target_metadata() for t in md.tables.values()}
    assert expected_tables <= tables
    assert {
        schema
        for schema in OWNED_SCHEMAS
        if any(table.startswith(f"{schema}.") for table in expected_tables)
    } <= schemas
    script_heads = set(
        __import__("alembic.script", fromlist=["ScriptDirectory"])
        .ScriptDirectory.from_config(alembic_config(url))
        .get_heads()
    )
    assert heads == script_heads
    assert await _diff(make_url(empty_database)) == []
    # Idempotent: a second upgrade is a no-op.
    await anyio.to_thread.run_sync(upgrade, url)


async def test_autogenerate_never_proposes_dropping_tables_it_does_not_own(empty_database):
    url = empty_database
    await anyio.to_thread.run_sync(upgrade, url)
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("CREATE TABLE public.apscheduler_jobs (id text PRIMARY KEY)")
        await connection.execute("CREATE SCHEMA scheduler")
        await connection.execute("CREATE TABLE scheduler.tasks (id text PRIMARY KEY)")
        await connection.execute("CREATE TABLE game.operator_notes (id int PRIMARY KEY)")
    finally:
        await connection.close()
    assert await _diff(make_url(empty_database)) == []
