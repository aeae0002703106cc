"""How long seat writes wait while ``game_0022`` (a seat's entry) migrates a live database.

Run from the repository root::

    python ops/bench/bench_online_migration.py [--database-url postgresql://postgres@127.0.0.1:5432/postgres]
        [--tables 200000] [--players 20000] [--pause-ms 20] [--keep]

Not a test: it prints figures and asserts nothing but that every seat ends with its table's
entry and no index is left invalid.  It creates a scratch database ``raiz_online_<pid>``
(dropped at the end unless ``--keep``), migrates it to ``game_0021`` and fills it as
``ops/bench/bench_limits.py`` does (``--tables`` six-seat tables, four seats each: 806,030
seats at the default 200,000), plus ``--load-tables`` open tables for the load.

Then it upgrades to the heads (``game_0022``) while two side connections, the way a running
older release would, each loop over one statement with ``--pause-ms`` between iterations:

* *insert*: a seat at one of the open tables, without ``entry_cents`` (the trigger fills it);
* *update*: ``left_at = now()`` of a seat the data set held before the migration (a player
  leaving; the rows the backfill rewrites).

It prints the migration's total time and, for each loop, the statements that ran during it,
their longest and 99th-percentile latency, and the size of ``ix_seats_paid_by_user``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.db.migrate import upgrade
from ops.bench.bench_limits import (
    HEAVY,
    LIGHT,
    USER_NAMESPACE,
    data_set_arguments,
    game_0021_data_set,
)

LOAD_TABLES = """
INSERT INTO game.tables (id, game, preset, options, seat_count, entry_cents, currency, fee_bps,
                         fee_rate_id, creator_id, status, fill_deadline_at, abandon_after_s,
                         created_at, step, round_number, last_events)
SELECT gen_random_uuid(), 'cacheta', 'cacheta-raiz', '{{}}', 6, 100 * (1 + t % 7), 'BRL', 1000,
       coalesce((SELECT min(id) FROM game.fee_rates), 1),
       uuid_generate_v5('{user_ns}', '1'), 'open', now() + interval '1 day', 60, now(), 0, 0,
       '[]'
FROM generate_series(1, {count}) t
"""


class Loop:
    """One side connection's statement, timed while the migration runs."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.latencies: list[float] = []
        self.errors: list[str] = []

    def report(self) -> str:
        if not self.latencies:
            return f"{self.name}: none ran"
        ordered = sorted(self.latencies)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return (
            f"{self.name}: {len(ordered)} statements, longest {max(ordered) * 1000:.0f} ms, "
            f"p99 {p99 * 1000:.1f} ms, median {statistics.median(ordered) * 1000:.1f} ms"
            + (f", {len(self.errors)} errors (first: {self.errors[0]})" if self.errors else "")
        )


async def run_loop(
    url: str, loop: Loop, statements: list[tuple[str, tuple[object, ...]]], pause: float
) -> None:
    connection = await asyncpg.connect(url)
    try:
        for sql, args in statements:
            started = time.perf_counter()
            try:
                await connection.execute(sql, *args)
            except asyncpg.PostgresError as error:
                loop.errors.append(f"{type(error).__name__}: {error}")
            loop.latencies.append(time.perf_counter() - started)
            await asyncio.sleep(pause)
    except asyncio.CancelledError:
        pass
    finally:
        await connection.close()


async def load_statements(url: str) -> tuple[list, list]:
    connection = await asyncpg.connect(url)
    try:
        tables = [
            row[0]
            for row in await connection.fetch(
                "SELECT id FROM game.tables WHERE status = 'open' ORDER BY id"
            )
        ]
        users = [
            row[0]
            for row in await connection.fetch(
                "SELECT id FROM game.users WHERE id NOT IN ($1, $2) ORDER BY id LIMIT 6",
                HEAVY,
                LIGHT,
            )
        ]
        # old seats still seated, spread over the whole table (the backfill's range)
        old = [
            row[0]
            for row in await connection.fetch(
                "SELECT id FROM game.seats WHERE left_at IS NULL AND id % 37 = 0 ORDER BY random()"
            )
        ]
    finally:
        await connection.close()
    inserts = [
        (
            "INSERT INTO game.seats (table_id, user_id, position, entry_transfer_id, seated_at) "
            "VALUES ($1, $2, $3, $4, now())",
            (table, users[position], position, f"load:{table}:{position}"),
        )
        for table in tables
        for position in range(6)
    ]
    updates = [("UPDATE game.seats SET left_at = now() WHERE id = $1", (seat,)) for seat in old]
    return inserts, updates


async def during_migration(url: str, pause: float) -> tuple[float, Loop, Loop]:
    inserts, updates = await load_statements(url)
    insert_loop, update_loop = Loop("insert a seat"), Loop("update a seat (left_at)")
    tasks = [
        asyncio.create_task(run_loop(url, insert_loop, inserts, pause)),
        asyncio.create_task(run_loop(url, update_loop, updates, pause)),
    ]
    await asyncio.sleep(1.0)  # the loops are running before the migration starts
    insert_loop.latencies.clear()
    update_loop.latencies.clear()
    started = time.perf_counter()
    await asyncio.to_thread(upgrade, url)
    took = time.perf_counter() - started
    await asyncio.sleep(0.5)  # the statements the migration held back complete
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return took, insert_loop, update_loop


async def check(url: str) -> str:
    connection = await asyncpg.connect(url)
    try:
        wrong = await connection.fetchval(
            "SELECT count(*) FROM game.seats s JOIN game.tables t ON t.id = s.table_id "
            "WHERE s.entry_cents IS DISTINCT FROM t.entry_cents"
        )
        invalid = await connection.fetchval(
            "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'game' AND NOT i.indisvalid"
        )
        size = await connection.fetchval(
            "SELECT pg_size_pretty(pg_relation_size('game.ix_seats_paid_by_user'))"
        )
        seats = await connection.fetchval("SELECT count(*) FROM game.seats")
    finally:
        await connection.close()
    assert wrong == 0, f"{wrong} seats without their table's entry"
    assert invalid == 0, f"{invalid} invalid indexes"
    return f"{seats} seats, all with their table's entry; ix_seats_paid_by_user {size}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    data_set_arguments(parser)
    parser.add_argument("--load-tables", type=int, default=3_000)
    parser.add_argument("--pause-ms", type=float, default=20.0)
    args = parser.parse_args()
    extra = LOAD_TABLES.format(user_ns=USER_NAMESPACE, count=args.load_tables)
    with game_0021_data_set(args, "raiz_online", extra) as url:
        took, inserts, updates = asyncio.run(during_migration(url, args.pause_ms / 1000))
        print(f"migration to the heads (game_0022): {took:.1f} s")
        print(f"  {inserts.report()}")
        print(f"  {updates.report()}")
        print(asyncio.run(check(url)))


if __name__ == "__main__":
    main()
