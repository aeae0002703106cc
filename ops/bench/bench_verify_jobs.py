"""Benchmark ``raiz audit verify-all --jobs N`` once its worker processes have started.

Run from the repository root against a database with finished rounds (``ops/load/run.py
--keep-database`` leaves one)::

    DATABASE_URL=postgresql://... RAIZ_ENV=test python ops/bench/bench_verify_jobs.py [--jobs 2]

``verify-all`` prints its own rate, start-up included: each worker is a fresh interpreter that
imports the service's modules (about a second), which dominates on a few hundred rounds.  This
script separates the two: it starts the workers, lets each verify one table, then times two
runs over every finished table split between them (the command's own batching and snapshot
import, ``app.compliance.audit``).  Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sqlalchemy import text

from app.compliance import audit
from app.compliance.service import allow_fixed_streams
from app.config import get_settings
from app.db import Database, resolve_database_url

RUNS = 2


async def measure(jobs: int) -> None:
    settings = get_settings()
    url = resolve_database_url(settings)
    database = Database.connect(url, settings)
    try:
        async with database.session() as session:
            await session.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"))
            snapshot = str(await session.scalar(text("SELECT pg_export_snapshot()")))
            keys = await audit.pinned_keys(session)
            table_ids = await audit.finished_table_ids(session)
            if not table_ids:
                raise SystemExit("no finished round in this database")
            loop = asyncio.get_running_loop()
            with ProcessPoolExecutor(
                jobs,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=audit._start_worker,
                initargs=(url, settings, snapshot, keys, allow_fixed_streams(settings)),
            ) as pool:
                started = time.perf_counter()
                await asyncio.gather(
                    *(
                        loop.run_in_executor(pool, audit._verify_in_worker, table_ids[:1])
                        for _ in range(jobs)
                    )
                )
                print(f"{jobs} workers started and warm in {time.perf_counter() - started:.2f} s")
                size = -(-len(table_ids) // jobs)
                for _ in range(RUNS):
                    started = time.perf_counter()
                    shares = await asyncio.gather(
                        *(
                            loop.run_in_executor(
                                pool, audit._verify_in_worker, table_ids[start : start + size]
                            )
                            for start in range(0, len(table_ids), size)
                        )
                    )
                    seconds = time.perf_counter() - started
                    rounds = sum(share.rounds for share in shares)
                    assert not any(share.failures for share in shares), "a round failed"
                    print(
                        f"  {rounds} rounds of {len(table_ids)} tables in {seconds:.2f} s: "
                        f"{rounds / seconds:,.0f} rounds/s"
                    )
    finally:
        await database.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    asyncio.run(measure(parser.parse_args().jobs))


if __name__ == "__main__":
    main()
