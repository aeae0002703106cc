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


ENTRIES = {"a": 300, "b": 700, "c": 0}
"""The entries of the three tables whose seats ``_seats_before_game_0022`` inserts."""
OLD_INDEXES = {"ix_seats_table_id", "ix_seats_user_id", "ix_seats_user_id_seated_at"}
NEW_INDEXES = {"ix_seats_table_id", "ix_seats_user_id", "ix_seats_paid_by_user"}
BEFORE = {"nullable": None, "entry": {}, "indexes": OLD_INDEXES, "checks": {}}
"""``game.seats`` at ``game_0021`` (it has no CHECK constraint)."""


async def _seats_before_game_0022(url: str) -> tuple[object, dict[str, object]]:
    """Migrate to ``game_0021`` and insert one user and a seat at each of three tables
    (paid, paid and refunded, free): the user's id and the tables' ids by name."""
    from alembic import command

    await anyio.to_thread.run_sync(upgrade, url)
    await anyio.to_thread.run_sync(command.downgrade, alembic_config(url), "game_0021")
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("SET session_replication_role = replica")  # no FK rows
        user = await connection.fetchval(
            "INSERT INTO game.users (id, username, password_hash, role, created_at) "
            "VALUES (gen_random_uuid(), 'old', 'x', 'player', now()) RETURNING id"
        )
        tables = {}
        for name, cents in ENTRIES.items():
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
    return user, tables


async def _seats(url: str) -> dict[str, object]:
    """Whether ``entry_cents`` is nullable, the seats' ``ix_seats_`` indexes, each seat's entry
    by its table."""
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
        checks = {
            row[0]: row[1]
            for row in await connection.fetch(
                "SELECT conname::text, convalidated FROM pg_constraint "
                "WHERE conrelid = 'game.seats'::regclass AND contype = 'c'"
            )
        }
        entry = {}
        if "entry_cents" in columns:
            entry = {
                row["table_id"]: row["entry_cents"]
                for row in await connection.fetch("SELECT * FROM game.seats")
            }
        return {
            "nullable": columns.get("entry_cents"),
            "indexes": indexes,
            "checks": checks,
            "entry": entry,
        }
    finally:
        await connection.close()


def _after(tables: dict[str, object]) -> dict[str, object]:
    return {
        "nullable": "NO",
        "indexes": NEW_INDEXES,
        # validated, as a plain ADD CONSTRAINT leaves it; the NOT NULL stand-in is gone
        "checks": {"ck_seats_entry_cents": True},
        "entry": {tables[name]: cents for name, cents in ENTRIES.items()},
    }


async def test_game_0022_gives_each_seat_its_table_entry_and_downgrades(empty_database):
    """The seats a database holds before ``game_0022`` get their table's entry (paid, refunded,
    free alike), then NOT NULL; the old index gives way to the partial one the limits read;
    the downgrade takes it all back and the upgrade redoes it."""
    from alembic import command

    url = empty_database
    config = alembic_config(url)
    _, tables = await _seats_before_game_0022(url)
    assert await _seats(url) == BEFORE
    await anyio.to_thread.run_sync(upgrade, url)
    assert await _seats(url) == _after(tables)
    await anyio.to_thread.run_sync(command.downgrade, config, "game_0021")
    assert await _seats(url) == BEFORE
    await anyio.to_thread.run_sync(upgrade, url)
    assert await _seats(url) == _after(tables)
    assert await _diff(make_url(url)) == []


async def _backfill_waiting(url: str) -> int:
    """The migration's backend once its backfill waits for a lock (the test holds it)."""
    connection = await asyncpg.connect(url)
    try:
        with anyio.fail_after(60):
            while True:
                pid = await connection.fetchval(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                    "AND query LIKE 'UPDATE game.seats s SET entry_cents%' "
                    "AND wait_event_type = 'Lock'"
                )
                if pid is not None:
                    return int(pid)
                await anyio.sleep(0.02)
    finally:
        await connection.close()


async def _upgrade_holding_back_the_backfill(url: str, during) -> list[BaseException]:
    """Upgrade while a transaction holds ``game.tables`` (the backfill joins it, the steps
    before it do not): ``during(connection, pid)`` runs in that transaction once the backfill
    waits; then the lock is released.  The upgrade's exception, if any."""
    failed: list[BaseException] = []

    async def migrate() -> None:
        try:
            await anyio.to_thread.run_sync(upgrade, url)
        except Exception as error:  # the caller inspects it
            failed.append(error)

    holder = await asyncpg.connect(url)
    try:
        async with anyio.create_task_group() as group:
            transaction = holder.transaction()
            await transaction.start()
            await holder.execute("LOCK TABLE game.tables IN ACCESS EXCLUSIVE MODE")
            group.start_soon(migrate)
            try:
                await during(holder, await _backfill_waiting(url))
            finally:
                await transaction.commit()
    finally:
        await holder.close()
    return failed


async def test_game_0022_a_seat_inserted_during_the_backfill_gets_its_entry(empty_database):
    """The batches run outside a transaction while seats are inserted by the running release,
    which leaves the entry out: the trigger is in place before the first batch, so such a
    seat has its table's entry at once and NOT NULL holds after the backfill."""
    url = empty_database
    _, tables = await _seats_before_game_0022(url)
    inserted: dict[str, object] = {}

    async def seat_a_player(connection: asyncpg.Connection, pid: int) -> None:
        user = await connection.fetchval(
            "INSERT INTO game.users (id, username, password_hash, role, created_at) "
            "VALUES (gen_random_uuid(), 'during', 'x', 'player', now()) RETURNING id"
        )
        inserted["entry"] = await connection.fetchval(
            "INSERT INTO game.seats (table_id, user_id, position, entry_transfer_id, seated_at) "
            "VALUES ($1, $2, 1, 'entry:during', now()) RETURNING entry_cents",
            tables["b"],
            user,
        )
        # held past the lock timeout: the batch gives way and tries again
        await anyio.sleep(2.5)

    assert await _upgrade_holding_back_the_backfill(url, seat_a_player) == []
    assert inserted == {"entry": ENTRIES["b"]}
    connection = await asyncpg.connect(url)
    try:
        assert (
            await connection.fetchval(
                "SELECT entry_cents FROM game.seats WHERE entry_transfer_id = 'entry:during'"
            )
            == ENTRIES["b"]
        )
    finally:
        await connection.close()
    assert await _diff(make_url(url)) == []


async def test_game_0022_interrupted_runs_again_and_rebuilds_an_invalid_index(empty_database):
    """Killed in its backfill, ``game_0022`` leaves the nullable column and its trigger
    committed and ``game_0021`` recorded; run again, it completes.  An INVALID
    ``ix_seats_paid_by_user`` (a concurrent build that failed) is dropped and built again:
    no index is left invalid and the schema is the models'."""
    url = empty_database
    _, tables = await _seats_before_game_0022(url)

    async def kill(connection: asyncpg.Connection, pid: int) -> None:
        assert await connection.fetchval("SELECT pg_terminate_backend($1)", pid)

    assert len(await _upgrade_holding_back_the_backfill(url, kill)) == 1
    connection = await asyncpg.connect(url)
    try:
        assert (
            await connection.fetchval(
                "SELECT version_num FROM public.alembic_version WHERE version_num LIKE 'game_%'"
            )
            == "game_0021"
        )
        assert (await _seats(url))["nullable"] == "YES"
        # a concurrent build that failed (a duplicate) leaves its index INVALID
        with pytest.raises(asyncpg.UniqueViolationError):
            await connection.execute(
                "CREATE UNIQUE INDEX CONCURRENTLY ix_seats_paid_by_user ON game.seats (user_id)"
            )
        invalid = (
            "SELECT indexrelid::regclass::text FROM pg_index i JOIN pg_class c "
            "ON c.oid = i.indrelid WHERE c.relnamespace = 'game'::regnamespace "
            "AND NOT i.indisvalid"
        )
        assert [row[0] for row in await connection.fetch(invalid)] == ["game.ix_seats_paid_by_user"]
        await anyio.to_thread.run_sync(upgrade, url)
        assert await connection.fetch(invalid) == []
        assert await connection.fetchval(
            "SELECT pg_get_indexdef('game.ix_seats_paid_by_user'::regclass)"
        ) == (
            "CREATE INDEX ix_seats_paid_by_user ON game.seats USING btree (user_id, seated_at) "
            "INCLUDE (entry_cents) WHERE ((entry_transfer_id IS NOT NULL) "
            "AND (refund_transfer_id IS NULL))"
        )
    finally:
        await connection.close()
    assert await _seats(url) == _after(tables)
    assert await _diff(make_url(url)) == []
