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


async def test_game_0022_gives_each_seat_its_table_entry_and_downgrades(empty_database):
    """The seats a database holds before ``game_0022`` get their table's entry (paid, refunded,
    free alike), then NOT NULL; the old index gives way to the partial one the limits read;
    the downgrade takes it all back and the upgrade redoes it."""
    from alembic import command

    url = empty_database
    config = alembic_config(url)
    await anyio.to_thread.run_sync(upgrade, url)
    await anyio.to_thread.run_sync(command.downgrade, config, "game_0021")
    entries = {"a": 300, "b": 700, "c": 0}
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("SET session_replication_role = replica")  # no FK rows
        user = await connection.fetchval(
            "INSERT INTO game.users (id, username, password_hash, role, created_at) "
            "VALUES (gen_random_uuid(), 'old', 'x', 'player', now()) RETURNING id"
        )
        tables = {}
        for name, cents in entries.items():
            tables[name] = await connection.fetchval(
                "INSERT INTO game.tables (id, game, preset, options, seat_count, entry_cents, "
                "currency, fee_bps, fee_rate_id, creator_id, status, fill_deadline_at, "
                "abandon_after_s, created_at, step, round_number, last_events) VALUES "
                "(gen_random_uuid(), 'cacheta', 'p', '{}', 2, $1, 'BRL', 0, 1, $2, 'open', "
                "now(), 60, now(), 0, 0, '[]') RETURNING id",
                cents,
                user,
            )
        for name, refund in (("a", None), ("b", "refund:b"), ("c", None)):
            await connection.execute(
                "INSERT INTO game.seats (table_id, user_id, position, entry_transfer_id, "
                "refund_transfer_id, seated_at) VALUES ($1, $2, 0, $3, $4, now())",
                tables[name],
                user,
                None if name == "c" else f"entry:{name}",
                refund,
            )
    finally:
        await connection.close()

    async def seats() -> dict[str, object]:
        connection = await asyncpg.connect(url)
        try:
            columns = {
                row[0]: row[1]
                for row in await connection.fetch(
                    "SELECT column_name::text, is_nullable::text FROM information_schema.columns "
                    "WHERE table_schema = 'game' AND table_name = 'seats'"
                )
            }
            indexes = {
                row[0]
                for row in await connection.fetch(
                    "SELECT indexname::text FROM pg_indexes WHERE schemaname = 'game' "
                    "AND tablename = 'seats' AND indexname LIKE 'ix_seats_%'"
                )
            }
            entry = {}
            if "entry_cents" in columns:
                entry = {
                    row["table_id"]: row["entry_cents"]
                    for row in await connection.fetch("SELECT * FROM game.seats")
                }
            return {"nullable": columns.get("entry_cents"), "indexes": indexes, "entry": entry}
        finally:
            await connection.close()

    before = {"nullable": None, "entry": {}}
    old_indexes = {"ix_seats_table_id", "ix_seats_user_id", "ix_seats_user_id_seated_at"}
    new_indexes = {"ix_seats_table_id", "ix_seats_user_id", "ix_seats_paid_by_user"}
    assert await seats() == {**before, "indexes": old_indexes}
    after = {
        "nullable": "NO",
        "indexes": new_indexes,
        "entry": {tables[name]: cents for name, cents in entries.items()},
    }
    await anyio.to_thread.run_sync(upgrade, url)
    assert await seats() == after
    await anyio.to_thread.run_sync(command.downgrade, config, "game_0021")
    assert await seats() == {**before, "indexes": old_indexes}
    await anyio.to_thread.run_sync(upgrade, url)
    assert await seats() == after
    assert await _diff(make_url(url)) == []
