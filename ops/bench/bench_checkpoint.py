"""How long a checkpoint takes to find and append the rounds signed since the last one, with a
long history already in the tree.

Run from the repository root::

    python ops/bench/bench_checkpoint.py [--database-url postgresql://postgres@127.0.0.1:5432/postgres]
        [--leaves 1000000] [--new 1000] [--late 10] [--repeat 3] [--keep] [--reuse NAME]

Not a test: it prints figures and checks only that each checkpoint appended every new round.
It creates a scratch database ``raiz_ckpt_<pid>`` (dropped at the end unless ``--keep``;
``--reuse NAME`` measures a kept one again), migrates it and fills it with ``INSERT ... SELECT
generate_series`` (signatures only: their rounds' foreign keys are off):

* ``--leaves`` signed rounds over ten years (records shaped like real ones, about 900
  bytes), all in the Merkle leaves, and a checkpoint over them (``make_checkpoint``, which
  stores their subtrees);
* ``--new`` rounds signed after that checkpoint and ``--late`` signed an hour before it,
  whose transactions committed after it (a long transaction held them): the next
  checkpoint appends all of them, the late ones first (signing order).

Then, after ``VACUUM ANALYZE``, it prints ``EXPLAIN (ANALYZE, BUFFERS)`` of the query that
finds the rounds to append (``PENDING_ROUNDS``: the queue ``game.pending_leaves``, migration
``compliance_0006``) and of the anti-join of every signature against every leaf it replaced,
and times ``make_checkpoint`` ``--repeat`` times each way (each rolled back: the same new
rounds every time, so ``--reuse`` measures the same again; "as before" swaps the anti-join
in), checking each time that it appended every new round in order and emptied the queue.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg
from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncSession

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.compliance import checkpoints
from app.config import Settings
from app.db import Database
from app.db.migrate import upgrade
from ops.bench.bench_ledger import admin, with_database

ANTI_JOIN = text(
    "SELECT s.round_id, s.record_hash, false AS appended FROM game.round_signatures s "
    "LEFT OUTER JOIN game.merkle_leaves l ON l.round_id = s.round_id "
    "WHERE l.round_id IS NULL ORDER BY s.signed_at, s.round_id"
)
"""What a checkpoint ran before ``compliance_0006``: every signature against every leaf."""

SIGN = """
INSERT INTO game.round_signatures (round_id, record, record_hash, key_id, signature, signed_at)
SELECT id, record, sha256(convert_to(record::text, 'UTF8')), 'bench',
       sha512(convert_to(record::text, 'UTF8')), signed_at
FROM (SELECT id, signed_at, jsonb_build_object(
        'format', 'raiz-round/2',
        'table', jsonb_build_object('id', gen_random_uuid(), 'game', 'cacheta',
                 'preset', 'cacheta-raiz', 'options', jsonb_build_object('lives', 2),
                 'currency', 'BRL', 'entry_cents', 500, 'fee_bps', 1000),
        'round', jsonb_build_object('id', id, 'number', 1, 'start_state_hash', h),
        'rng', jsonb_build_object('round_id', gen_random_uuid(), 'version', 'raiz-rng/1',
               'commitment', h, 'seed', h, 'client_seeds', jsonb_build_array(h, h, h, h),
               'fixed_streams', '[]'::jsonb),
        'log', jsonb_build_object('entries', 40, 'last_hash', h),
        'final_state_hash', h,
        'summary', jsonb_build_object('result', 'closed', 'winner_seat', 2),
        'ended_at', signed_at) AS record
      FROM (SELECT gen_random_uuid() AS id, {signed_at} AS signed_at,
                   encode(sha256(('bench' || i)::bytea), 'hex') AS h
            FROM generate_series(1, {count}) i) r) s
"""
"""``count`` signed rounds, ``signed_at`` an expression of ``i`` (1..count)."""


async def fill(url: str, args: argparse.Namespace, settings: Settings) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("SET session_replication_role = replica")  # no game.rounds
        await connection.execute(
            "INSERT INTO game.signing_keys (key_id, algorithm, public_key, created_at) "
            "VALUES ('bench', 'ed25519', sha256('bench'), timestamptz '2016-01-01')"
        )
        began = time.perf_counter()
        span_s = 10 * 365 * 86_400
        step_s = (span_s - 2 * 86_400) / args.leaves  # the last two days ago
        history = f"now() - interval '10 years' + i * {step_s} * interval '1 second'"
        await connection.execute(SIGN.format(signed_at=history, count=args.leaves))
        await connection.execute(
            "INSERT INTO game.merkle_leaves (leaf_index, round_id, record_hash, added_at) "
            "SELECT row_number() OVER (ORDER BY signed_at, round_id) - 1, round_id, "
            "record_hash, signed_at + interval '1 day' FROM game.round_signatures"
        )
        # as the checkpoints would have left it: none of them queued
        await connection.execute("DELETE FROM game.pending_leaves")
        await connection.execute("VACUUM ANALYZE game.round_signatures")
        await connection.execute("VACUUM ANALYZE game.merkle_leaves")
        await connection.execute("VACUUM ANALYZE game.pending_leaves")
        print(
            f"filled {args.leaves:,} signatures and leaves in {time.perf_counter() - began:,.0f} s"
        )
    finally:
        await connection.close()
    database = Database.connect(url, settings)
    try:
        began = time.perf_counter()
        async with database.session() as session:
            made, _ = await checkpoints.make_checkpoint(session, settings, origin="cli")
            await session.commit()
        print(
            f"checkpoint over them (storing every subtree): {made.tree_size:,} leaves in "
            f"{time.perf_counter() - began:,.1f} s"
        )
    finally:
        await database.dispose()
    connection = await asyncpg.connect(url)
    try:  # queued by the trigger (it fires under replica too)
        await connection.execute("SET session_replication_role = replica")
        if args.late:  # signed before the checkpoint, committed after it
            late = "now() - interval '1 hour' - i * interval '1 ms'"
            await connection.execute(SIGN.format(signed_at=late, count=args.late))
        new = "clock_timestamp() + i * interval '1 ms'"
        await connection.execute(SIGN.format(signed_at=new, count=args.new))
        for table in ("round_signatures", "merkle_leaves", "pending_leaves"):
            await connection.execute(f"VACUUM ANALYZE game.{table}")
    finally:
        await connection.close()


async def explain(url: str, label: str, query: TextClause) -> None:
    connection = await asyncpg.connect(url)
    try:
        plan = [
            row[0] for row in await connection.fetch(f"EXPLAIN (ANALYZE, BUFFERS) {query.text}")
        ]
    finally:
        await connection.close()
    print(f"{label}:")
    for line in plan:
        print(f"    {line}")


@contextmanager
def pending_query(query: TextClause) -> Iterator[None]:
    """``make_checkpoint`` finding the rounds to append with ``query``."""
    kept = checkpoints.PENDING_ROUNDS
    checkpoints.PENDING_ROUNDS = query
    try:
        yield
    finally:
        checkpoints.PENDING_ROUNDS = kept


async def time_checkpoints(url: str, args: argparse.Namespace, settings: Settings) -> None:
    database = Database.connect(url, settings)
    try:
        for label, query in (
            ("as before (anti-join)", ANTI_JOIN),
            ("now (queue)", checkpoints.PENDING_ROUNDS),
        ):
            spent = []
            for _ in range(args.repeat):
                with pending_query(query):
                    async with database.session() as session:
                        began = time.perf_counter()
                        made, _ = await checkpoints.make_checkpoint(session, settings, origin="cli")
                        spent.append(time.perf_counter() - began)
                        problem = await check(session, args, made.tree_size)
                        await session.rollback()
                if problem:
                    raise SystemExit(f"make_checkpoint {label}: {problem}")
            print(
                f"make_checkpoint {label:<22} {made.tree_size - args.leaves:>6,} appended: "
                f"median {statistics.median(spent) * 1000:>8,.1f} ms "
                f"(min {min(spent) * 1000:,.1f}, max {max(spent) * 1000:,.1f}, {args.repeat} runs)"
            )
    finally:
        await database.dispose()
    print(f"each appended the {args.late} late rounds first, then the {args.new} new ones")


async def check(session: AsyncSession, args: argparse.Namespace, size: int) -> str | None:
    """What is wrong with the checkpoint just made in ``session`` (None: nothing)."""
    appended = await session.scalars(
        text(
            "SELECT s.signed_at < c.created_at FROM game.merkle_leaves l "
            "JOIN game.round_signatures s USING (round_id), "
            "(SELECT created_at FROM game.checkpoints ORDER BY id LIMIT 1) c "
            "WHERE l.leaf_index >= :first ORDER BY l.leaf_index"
        ),
        {"first": args.leaves},
    )
    if size != args.leaves + args.late + args.new:
        return f"tree size {size:,}"
    if list(appended) != [True] * args.late + [False] * args.new:
        return "not in signing order"
    if queued := await session.scalar(text("SELECT count(*) FROM game.pending_leaves")):
        return f"{queued} rounds left in the queue"
    return None


async def run(args: argparse.Namespace) -> None:
    name = args.reuse or f"raiz_ckpt_{os.getpid()}"
    url = with_database(args.database_url, name)
    settings = Settings(database_url=url, db_statement_timeout_ms=args.statement_timeout_ms)
    if not args.reuse:
        await admin(args.database_url, f'CREATE DATABASE "{name}"')
    try:
        if not args.reuse:
            await asyncio.to_thread(upgrade, url)
            await fill(url, args, settings)
        await explain(
            url, "pending query before compliance_0006 (every signature, every leaf)", ANTI_JOIN
        )
        await explain(
            url, "pending query now (PENDING_ROUNDS: the queue)", checkpoints.PENDING_ROUNDS
        )
        await time_checkpoints(url, args, settings)
    finally:
        if not args.keep:
            await admin(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        else:
            print(f"kept database {name} (measure it again with --reuse {name})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
        help="a superuser's URL on the server (the scratch database is created there)",
    )
    parser.add_argument("--leaves", type=int, default=1_000_000, help="rounds already in the tree")
    parser.add_argument("--new", type=int, default=1_000, help="rounds signed since")
    parser.add_argument("--late", type=int, default=10, help="signed before it, committed after")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--statement-timeout-ms", type=int, default=60_000)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument("--reuse", help="measure this kept scratch database again")
    args = parser.parse_args()
    if min(args.leaves, args.new, args.repeat) < 1 or args.late < 0:
        parser.error("--leaves, --new and --repeat must be at least 1, --late at least 0")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
