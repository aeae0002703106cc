"""What the entry-limit check's used amount costs, before and after ``game_0022``, on one data set.

Run from the repository root::

    python ops/bench/bench_limits.py [--database-url postgresql://postgres@127.0.0.1:5432/postgres]
        [--tables 200000] [--players 20000] [--runs 200] [--keep]

Not a test: it prints figures and asserts nothing but that both queries sum the same.  It
creates a scratch database ``raiz_limits_<pid>`` (dropped at the end unless ``--keep``),
migrates it to ``game_0021`` (the seats without their entry) and fills it with ``INSERT ...
SELECT generate_series``:

* ``--tables`` finished six-seat tables over the last 60 days, entries of 100 to 1,000 cents,
  four seats each from ``--players`` players (one in 20 refunded);
* ``heavy``: 5,000 paid seats in the last 30 days (one in 10 refunded) and 1,000 older;
* ``light``: 20 paid seats in the last 30 days and 10 older.

Then, for both players, ``--runs`` times each: the server's execution time (``EXPLAIN
ANALYZE``) and the round trip through a session, of ``game_0021``'s query (the seats joined
to their tables for the entry, ``ix_seats_user_id_seated_at``); the migration to
``game_0022`` (its backfill), a ``VACUUM ANALYZE`` and a ``REINDEX`` of the new index (when
``game_0022`` built it in the backfill's transaction, it also held the rows' old versions: 73
MB, 36 MB after; built concurrently after the batches, it is 36 MB at once); the same of the
service's own ``app.accounts.limits.used_cents`` (the seats' entries,
``ix_seats_paid_by_user``), and, for comparison, of the same query with a full covering
index (``(user_id, seated_at) INCLUDE (entry_cents, entry_transfer_id,
refund_transfer_id)``) in place of the partial one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy import func, select, text
from sqlalchemy.dialects import postgresql

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from alembic import command

from app.accounts.limits import PERIOD_WINDOWS, used_cents, used_cents_query
from app.config import Settings
from app.db import Database
from app.db.migrate import alembic_config, upgrade
from app.tables.models import Seat, Table
from ops.bench.bench_ledger import admin, with_database

USER_NAMESPACE = "00000000-0000-0000-0000-00000000000a"
TABLE_NAMESPACE = "00000000-0000-0000-0000-00000000000b"
HEAVY = uuid.uuid5(uuid.UUID(USER_NAMESPACE), "heavy")
LIGHT = uuid.uuid5(uuid.UUID(USER_NAMESPACE), "light")

FILL = """
SET session_replication_role = replica;  -- bulk load: no triggers, no foreign-key checks
CREATE EXTENSION IF NOT EXISTS "uuid-ossp";

INSERT INTO game.users (id, username, password_hash, role, created_at)
SELECT uuid_generate_v5('{user_ns}', u::text), 'u' || u, 'x', 'player', now() - interval '1 year'
FROM generate_series(1, {players}) u
UNION ALL SELECT '{heavy}', 'heavy', 'x', 'player', now() - interval '1 year'
UNION ALL SELECT '{light}', 'light', 'x', 'player', now() - interval '1 year';

INSERT INTO game.tables (id, game, preset, options, seat_count, entry_cents, currency, fee_bps,
                         fee_rate_id, creator_id, status, fill_deadline_at, abandon_after_s,
                         created_at, started_at, ended_at, step, round_number, last_events,
                         result)
SELECT uuid_generate_v5('{table_ns}', t::text), 'cacheta', 'cacheta-raiz', '{{}}', 6,
       100 * (1 + t % 10), 'BRL', 1000, coalesce((SELECT min(id) FROM game.fee_rates), 1),
       uuid_generate_v5('{user_ns}', (t % {players} + 1)::text), 'finished', ts, 60, ts, ts,
       ts + interval '20 minutes', 0, 1, '[]', '{{"reason": "won"}}'
FROM (SELECT t, now() - interval '60 days' + t * interval '60 days' / {tables} AS ts
      FROM generate_series(1, {tables}) t) s;

-- four seats a table from the players (one in 20 refunded)
INSERT INTO game.seats (table_id, user_id, position, engine_seat, entry_transfer_id,
                        refund_transfer_id, left_at, seated_at)
SELECT tb.id,
       uuid_generate_v5('{user_ns}', ((t::bigint * 4 + k) * 7919 % {players} + 1)::text), k, k,
       'entry:' || t || ':' || k,
       CASE WHEN (t + k) % 20 = 0 THEN 'refund:' || t || ':' || k END,
       CASE WHEN (t + k) % 20 = 0 THEN tb.created_at END, tb.created_at
FROM generate_series(1, {tables}) t, generate_series(0, 3) k,
     LATERAL (SELECT id, created_at FROM game.tables
              WHERE id = uuid_generate_v5('{table_ns}', t::text)) tb;

-- heavy: 5,000 seats in the last 30 days (one in 10 refunded), 1,000 before; light: 20 and 10
INSERT INTO game.seats (table_id, user_id, position, entry_transfer_id, refund_transfer_id,
                        left_at, seated_at)
SELECT tb.id, p.who, p.position, 'entry:' || p.t || ':' || p.position,
       CASE WHEN p.refunded THEN 'refund:' || p.t || ':' || p.position END,
       CASE WHEN p.refunded THEN tb.created_at END, tb.created_at
FROM (SELECT '{heavy}'::uuid AS who, 4 AS position, {half} + i * ({half} / 5001) AS t,
             i % 10 = 0 AS refunded FROM generate_series(1, 5000) i
      UNION ALL
      SELECT '{heavy}', 4, i * ({half} / 1001), false FROM generate_series(1, 1000) i
      UNION ALL
      SELECT '{light}', 5, {half} + i * ({half} / 21), false FROM generate_series(1, 20) i
      UNION ALL
      SELECT '{light}', 5, i * ({half} / 11), false FROM generate_series(1, 10) i) p
JOIN game.tables tb ON tb.id = uuid_generate_v5('{table_ns}', p.t::text);
"""


def old_query(user_id: uuid.UUID, now: dt.datetime) -> Any:
    """``used_cents`` as ``game_0021`` had it: each seat joined to its table for the entry."""
    seated = Seat.seated_at
    sums = [
        func.coalesce(func.sum(Table.entry_cents).filter(seated > now - window), 0)
        for window in PERIOD_WINDOWS.values()
    ]
    return (
        select(*sums)
        .select_from(Seat)
        .join(Table, Table.id == Seat.table_id)
        .where(
            Seat.user_id == user_id,
            seated > now - max(PERIOD_WINDOWS.values()),
            Seat.entry_transfer_id.is_not(None),
            Seat.refund_transfer_id.is_(None),
        )
    )


def sql_of(statement: Any) -> str:
    dialect = postgresql.dialect()  # type: ignore[no-untyped-call]
    return str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))


def _nodes(plan: dict[str, Any]) -> list[str]:
    here = plan["Node Type"]
    if "Index Name" in plan:
        here += f" on {plan['Index Name']}"
    if "Heap Fetches" in plan:
        here += f" (heap fetches {plan['Heap Fetches']})"
    return [here] + [node for child in plan.get("Plans", []) for node in _nodes(child)]


async def explain(connection: asyncpg.Connection, sql: str, runs: int) -> tuple[float, str, int]:
    """Median server execution time (ms), the plan's nodes, and shared buffers hit/read."""
    times = []
    plan: dict[str, Any] = {}
    for _ in range(runs):
        raw = await connection.fetchval(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}")
        result = (json.loads(raw) if isinstance(raw, str) else raw)[0]
        times.append(result["Execution Time"])
        plan = result["Plan"]
    buffers = plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)
    return statistics.median(times), " > ".join(_nodes(plan)), buffers


async def round_trips(database: Database, query: Any, runs: int) -> tuple[float, list[int]]:
    """Median wall time (ms) of the query through a session, and its sums."""
    times = []
    row: list[int] = []
    async with database.session() as session:
        await session.execute(text("SELECT 1"))
        for _ in range(runs):
            start = time.perf_counter()
            row = [int(v) for v in (await session.execute(query)).one()]
            times.append((time.perf_counter() - start) * 1000)
        await session.rollback()
    return statistics.median(times), row


async def measure(
    url: str, label: str, of: Any, runs: int, service: bool = False
) -> dict[uuid.UUID, list[int]]:
    now = dt.datetime.now(dt.UTC)
    database = Database.connect(url, Settings(database_url=url))
    connection = await asyncpg.connect(url)
    sums = {}
    try:
        for name, who in (("light", LIGHT), ("heavy", HEAVY)):
            server, plan, buffers = await explain(connection, sql_of(of(who, now)), runs)
            wall, row = await round_trips(database, of(who, now), runs)
            if service:  # the service's own function gives what the bare query gives
                async with database.session() as session:
                    assert list((await used_cents(session, who, now)).values()) == row
            sums[who] = row
            print(
                f"{label:<34} {name:<5} server {server:8.3f} ms  round trip {wall:8.3f} ms  "
                f"buffers {buffers:5d}  used (day, week, month) {row}\n    plan: {plan}"
            )
    finally:
        await connection.close()
        await database.dispose()
    return sums


async def counts(url: str) -> str:
    connection = await asyncpg.connect(url)
    try:
        tables = await connection.fetchval("SELECT count(*) FROM game.tables")
        seats = await connection.fetchval("SELECT count(*) FROM game.seats")
        recent = await connection.fetch(
            "SELECT user_id, count(*) FROM game.seats WHERE user_id = ANY($1::uuid[]) "
            "AND seated_at > now() - interval '30 days' GROUP BY 1",
            [HEAVY, LIGHT],
        )
    finally:
        await connection.close()
    named = {HEAVY: "heavy", LIGHT: "light"}
    within = ", ".join(f"{named[row[0]]} {row[1]}" for row in recent)
    return f"{tables} tables, {seats} seats; seats in the last 30 days: {within}"


async def vacuum(url: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("VACUUM ANALYZE game.seats")
        await connection.execute("VACUUM ANALYZE game.tables")
    finally:
        await connection.close()


async def full_index_instead(url: str, runs: int) -> None:
    """The covering index over every seat instead of the partial one (rolled back)."""
    connection = await asyncpg.connect(url)
    try:
        async with connection.transaction():
            await connection.execute("DROP INDEX game.ix_seats_paid_by_user")
            await connection.execute(
                "CREATE INDEX ix_bench_full ON game.seats (user_id, seated_at) "
                "INCLUDE (entry_cents, entry_transfer_id, refund_transfer_id)"
            )
            size = await connection.fetchval(
                "SELECT pg_size_pretty(pg_relation_size('game.ix_bench_full'))"
            )
            now = dt.datetime.now(dt.UTC)
            for name, who in (("light", LIGHT), ("heavy", HEAVY)):
                server, plan, buffers = await explain(
                    connection, sql_of(used_cents_query(who, now)), runs
                )
                print(
                    f"{'full covering index (' + size + ')':<34} {name:<5} server "
                    f"{server:8.3f} ms  buffers {buffers:5d}\n    plan: {plan}"
                )
            raise _RollBack
    except _RollBack:
        pass
    finally:
        await connection.close()


class _RollBack(Exception):
    pass


async def sizes(url: str, *indexes: str) -> str:
    connection = await asyncpg.connect(url)
    try:
        found = [
            await connection.fetchval(
                "SELECT pg_size_pretty(pg_relation_size(('game.' || $1)::regclass))", name
            )
            for name in indexes
        ]
        return ", ".join(f"{name} {size}" for name, size in zip(indexes, found, strict=True))
    finally:
        await connection.close()


def data_set_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the data set (shared with ``bench_online_migration.py``)."""
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--tables", type=int, default=200_000)
    parser.add_argument("--players", type=int, default=20_000)
    parser.add_argument("--keep", action="store_true")


@contextlib.contextmanager
def game_0021_data_set(args: argparse.Namespace, prefix: str, extra: str = "") -> Iterator[str]:
    """A scratch database at ``game_0021`` filled with ``FILL`` (then the SQL ``extra``) and
    vacuumed; yields its URL and drops it afterwards (unless ``--keep``)."""
    name = f"{prefix}_{os.getpid()}"
    url = with_database(args.database_url, name)
    asyncio.run(admin(args.database_url, f'CREATE DATABASE "{name}"'))
    try:
        upgrade(url)
        command.downgrade(alembic_config(url), "game_0021")
        started = time.perf_counter()
        fill = FILL.format(
            user_ns=USER_NAMESPACE,
            table_ns=TABLE_NAMESPACE,
            players=args.players,
            tables=args.tables,
            half=args.tables // 2,
            heavy=HEAVY,
            light=LIGHT,
        )
        asyncio.run(admin_script(url, fill + extra))
        asyncio.run(vacuum(url))
        print(f"filled in {time.perf_counter() - started:.0f} s: {asyncio.run(counts(url))}")
        yield url
    finally:
        if not args.keep:
            asyncio.run(admin(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    data_set_arguments(parser)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with game_0021_data_set(args, "raiz_limits") as url:
        print(f"game_0021 index: {asyncio.run(sizes(url, 'ix_seats_user_id_seated_at'))}")
        before = asyncio.run(measure(url, "game_0021 (join of game.tables)", old_query, args.runs))
        started = time.perf_counter()
        upgrade(url)
        print(f"migration to game_0022 (backfill): {time.perf_counter() - started:.1f} s")
        asyncio.run(vacuum(url))
        print(f"game_0022 index: {asyncio.run(sizes(url, 'ix_seats_paid_by_user'))}")
        asyncio.run(admin_script(url, "REINDEX INDEX game.ix_seats_paid_by_user"))
        print(f"  after REINDEX: {asyncio.run(sizes(url, 'ix_seats_paid_by_user'))}")
        after = asyncio.run(
            measure(url, "game_0022 (the seats' entries)", used_cents_query, args.runs, True)
        )
        assert after == before, (before, after)
        asyncio.run(full_index_instead(url, args.runs))


async def admin_script(url: str, script: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(script)
    finally:
        await connection.close()


if __name__ == "__main__":
    main()
