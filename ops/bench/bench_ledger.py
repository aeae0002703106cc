"""Ledger throughput next to PostgreSQL's own TPC-B (pgbench), on the same server.

Run from the repository root::

    python ops/bench/bench_ledger.py [--database-url postgresql://postgres@127.0.0.1:5432/postgres]
        [--workers 16] [--processes 2] [--seconds 10] [--runs 3] [--scale 10]

Not a test: it prints figures and asserts nothing but a clean reconciliation.  It creates
two scratch databases on the server named by ``--database-url`` and drops them at the end.

- Ledger: a migrated scratch database, ``--wallets`` funded wallets and ``--tables`` table
  escrows; ``--processes`` client processes run ``--workers`` sessions in total, each
  committing one entry fee (wallet → escrow, ``Ledger.take_entry``: existence check, locks
  in id order, idempotency check, one write statement with entries, balances before/after
  and versions) per transaction.  Transfers are counted in the database afterwards, and
  ``reconcile`` must be clean.
- pgbench: ``pgbench -i -s <scale>``, then the built-in TPC-B script,
  ``pgbench -c <workers> -j 2 -T <seconds>``.

The two alternate ``--runs`` times and the best of each is reported (other processes on
the machine add noise to both).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.db.engine import async_url
from app.db.migrate import upgrade
from ledger import Ledger, LedgerError, reconcile
from ops.pgbench import tpcb

ENTRY_CENTS = 500
FUNDS_CENTS = 10**9
"""Each wallet can pay far more entries than a run takes: every transfer succeeds."""


@dataclass(frozen=True)
class Plan:
    """What one client process does."""

    url: str
    workers: int
    start_at: float
    """Wall-clock time (``time.time()``) at which every process starts its clock."""
    seconds: float
    users: list[str]
    tables: list[str]
    tag: str
    """Makes transfer ids unique across processes and runs."""


@dataclass(frozen=True)
class Outcome:
    """What one client process did."""

    attempted: int
    refused: int
    latencies_ms: list[float]


def with_database(url: str, name: str) -> str:
    return make_url(url).set(drivername="postgresql", database=name).render_as_string(False)


async def admin(url: str, statement: str) -> None:
    connection = await asyncpg.connect(with_database(url, "postgres"))
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


async def prepare_ledger(url: str, wallets: int, tables: int) -> tuple[list[str], list[str]]:
    users = [str(uuid.uuid4()) for _ in range(wallets)]
    table_ids = [str(uuid.uuid4()) for _ in range(tables)]
    engine = create_async_engine(async_url(url))
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    try:
        for start in range(0, wallets, 200):
            async with sessions() as session, session.begin():
                ledger = Ledger(session)
                for user in users[start : start + 200]:
                    await ledger.deposit(f"fund:{user}", uuid.UUID(user), FUNDS_CENTS)
        async with sessions() as session, session.begin():
            ledger = Ledger(session)
            for table in table_ids:
                await ledger.ensure_table_escrow(uuid.UUID(table))
    finally:
        await engine.dispose()
    return users, table_ids


def client_process(plan: Plan, results: multiprocessing.Queue) -> None:
    results.put(asyncio.run(run_clients(plan)))


async def run_clients(plan: Plan) -> Outcome:
    engine = create_async_engine(async_url(plan.url), pool_size=plan.workers, max_overflow=0)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    user_ids = [uuid.UUID(user) for user in plan.users]
    table_ids = [uuid.UUID(table) for table in plan.tables]
    latencies_ms: list[float] = []
    refused = 0

    async def client(number: int) -> int:
        nonlocal refused
        rng = random.Random(f"{plan.tag}:{number}")
        done = 0
        async with sessions() as session:  # open the connection before the clock starts
            await session.connection()
        await asyncio.sleep(max(0.0, plan.start_at - time.time()))
        deadline = plan.start_at + plan.seconds
        while time.time() < deadline:
            user, table = rng.choice(user_ids), rng.choice(table_ids)
            began = time.perf_counter()
            try:
                async with sessions() as session, session.begin():
                    await Ledger(session).take_entry(
                        f"bench:{plan.tag}:{number}:{done}", user, table, ENTRY_CENTS
                    )
            except LedgerError:
                refused += 1
            latencies_ms.append((time.perf_counter() - began) * 1000)
            done += 1
        return done

    try:
        counts = await asyncio.gather(*(client(number) for number in range(plan.workers)))
    finally:
        await engine.dispose()
    return Outcome(attempted=sum(counts), refused=refused, latencies_ms=latencies_ms)


async def committed_entry_fees(url: str) -> int:
    engine = create_async_engine(async_url(url))
    try:
        async with engine.connect() as connection:
            result = await connection.execute(
                text("SELECT COUNT(*) FROM ledger.transfers WHERE kind = 'entry_fee'")
            )
            return int(result.scalar_one())
    finally:
        await engine.dispose()


async def reconcile_summary(url: str) -> str:
    engine = create_async_engine(async_url(url))
    try:
        report = await reconcile(engine)
    finally:
        await engine.dispose()
    if not report.ok:
        problems = "\n".join(f"{p.check}: {p.message}" for p in report.problems)
        raise SystemExit(f"reconciliation failed:\n{problems}")
    return report.summary()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def ledger_run(args: argparse.Namespace, url: str, data: tuple[list[str], list[str]], run: int):
    users, tables = data
    per_process = [args.workers // args.processes] * args.processes
    for index in range(args.workers % args.processes):
        per_process[index] += 1
    context = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue = context.Queue()
    start_at = time.time() + 3.0  # time for the processes to import and connect
    processes = [
        context.Process(
            target=client_process,
            args=(
                Plan(url, count, start_at, args.seconds, users, tables, f"r{run}p{index}"),
                results,
            ),
        )
        for index, count in enumerate(per_process)
    ]
    before = asyncio.run(committed_entry_fees(url))
    for process in processes:
        process.start()
    outcomes: list[Outcome] = [results.get() for _ in processes]
    for process in processes:
        process.join()
    committed = asyncio.run(committed_entry_fees(url)) - before
    latencies = [value for outcome in outcomes for value in outcome.latencies_ms]
    rate = committed / args.seconds
    print(
        f"  ledger run {run}: {committed} entry fees committed in {args.seconds:g} s "
        f"-> {rate:,.0f} transfers/s (attempted {sum(o.attempted for o in outcomes)}, "
        f"refused {sum(o.refused for o in outcomes)}; latency p50 "
        f"{percentile(latencies, 0.5):.1f} ms, p99 {percentile(latencies, 0.99):.1f} ms)"
    )
    return rate


def pgbench_run(args: argparse.Namespace, url: str, pgbench: str, run: int) -> float:
    rate, latency = tpcb(pgbench, url, args.workers, 2, round(args.seconds))
    print(
        f"  pgbench run {run}: {rate:,.0f} tps"
        + (f" (latency average {latency} ms)" if latency else "")
    )
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--workers", type=int, default=16, help="concurrent sessions/clients")
    parser.add_argument("--processes", type=int, default=2, help="ledger client processes")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each run")
    parser.add_argument("--runs", type=int, default=3, help="alternating runs of each")
    parser.add_argument("--wallets", type=int, default=2_000)
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--scale", type=int, default=10, help="pgbench scale factor")
    args = parser.parse_args()
    pgbench = shutil.which("pgbench")
    if pgbench is None:
        raise SystemExit("pgbench is not installed (it comes with the PostgreSQL client)")

    suffix = f"{os.getpid()}_{uuid.uuid4().hex[:6]}"
    ledger_db, pgbench_db = f"raiz_bench_ledger_{suffix}", f"raiz_bench_pgbench_{suffix}"
    ledger_url = with_database(args.database_url, ledger_db)
    pgbench_url = with_database(args.database_url, pgbench_db)
    server = make_url(args.database_url)
    print(f"server {server.host}:{server.port or 5432}, client machine with {os.cpu_count()} CPUs")
    print(f"{args.workers} concurrent sessions, {args.runs} alternating runs of {args.seconds:g} s")
    try:
        for name in (ledger_db, pgbench_db):
            asyncio.run(admin(args.database_url, f'CREATE DATABASE "{name}"'))
        upgrade(ledger_url)
        data = asyncio.run(prepare_ledger(ledger_url, args.wallets, args.tables))
        subprocess.run(
            [pgbench, "-i", "-q", "-s", str(args.scale), pgbench_url],
            check=True,
            capture_output=True,
        )
        ledger_rates, pgbench_rates = [], []
        for run in range(1, args.runs + 1):
            ledger_rates.append(ledger_run(args, ledger_url, data, run))
            pgbench_rates.append(pgbench_run(args, pgbench_url, pgbench, run))
        print("  " + asyncio.run(reconcile_summary(ledger_url)))
    finally:
        for name in (ledger_db, pgbench_db):
            asyncio.run(admin(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    best_ledger, best_pgbench = max(ledger_rates), max(pgbench_rates)
    print(
        f"ledger: {best_ledger:,.0f} transfers/s "
        f"({args.processes} Python processes, {args.workers} sessions)"
    )
    print(
        f"pgbench TPC-B: {best_pgbench:,.0f} tps "
        f"(scale {args.scale}, -c {args.workers} -j 2 -T {round(args.seconds)})"
    )
    print(f"ratio ledger / pgbench: {best_ledger / best_pgbench:.2f}")


if __name__ == "__main__":
    main()
