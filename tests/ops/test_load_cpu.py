"""``ops/load/run.py``'s CPU accounting: a PostgreSQL backend that exits during the window
still counts (its CPU moves to the postmaster's reaped children's account), where the
service's live backends alone would miss it."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from ops.load.run import CpuSnapshot, process_cpu_s

pytestmark = pytest.mark.asyncio


async def test_a_backend_that_exits_during_the_window_counts_in_postgres_cpu(database_url):
    observer = await asyncpg.connect(database_url)
    try:
        before = await CpuSnapshot.take(0, observer)
        worker = await asyncpg.connect(database_url)
        pid = await worker.fetchval("SELECT pg_backend_pid()")
        await worker.fetchval("SELECT count(*) FROM generate_series(1, 3000000)")
        spent = process_cpu_s()[pid].cpu_s
        assert spent > 0.05  # the query's own work, as the kernel counted it
        await worker.close()
        for _ in range(50):  # until the postmaster has reaped it
            if pid not in process_cpu_s():
                break
            await asyncio.sleep(0.05)
        after = await CpuSnapshot.take(0, observer)
    finally:
        await observer.close()
    assert pid not in after.postgres
    assert after.postgres_all - before.postgres_all >= spent
    # the service's live backends alone: what the load test printed before, blind to it
    assert after.postgres_since(before) < spent
