"""Multi-worker ``/metrics`` (prometheus-client multiprocess mode) after a worker crashed:
``raiz serve`` restarts it, and what the dead worker last reported must stop counting --
its pool must not add to the host's connections, its last database counts (overdue or
failed deadlines, running tables) must not outlive a fresher count, and a reconciliation
problem found by one worker is cleared by the next clean sweep of any other."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from tests.live import ROOT

pytestmark = pytest.mark.asyncio

DEAD_WORKER = """
import os
from app.compliance.monitor import RECONCILE_PROBLEMS
from app.metrics import DB_POOL_CAPACITY, DB_POOL_CHECKED_OUT, DB_POOL_SIZE
from app.tables.metrics import TABLES_BY_STATUS
from app.timers.runner import DEADLINES_FAILED, DEADLINES_OVERDUE

DB_POOL_SIZE.set(10)
DB_POOL_CAPACITY.set(20)
DB_POOL_CHECKED_OUT.set(20)  # under load when it died
DEADLINES_OVERDUE.set(3)
DEADLINES_FAILED.set(2)
TABLES_BY_STATUS.labels("running").set(4)
RECONCILE_PROBLEMS.set(5)
os._exit(0)  # killed: no shutdown
"""

NEW_WORKER = """
import asyncio
from litestar.testing import AsyncTestClient
from app.compliance.monitor import RECONCILE_PROBLEMS
from app.db import Database
from app.main import create_app
from app.tables.metrics import count_tables_by_status
from app.timers.runner import count_failed_deadlines, count_overdue_deadlines
from tests.conftest import make_settings

async def main():
    settings = make_settings({url!r}, run_scheduler=False, db_pool_size=5)
    async with AsyncTestClient(app=create_app(settings)):  # the worker's start-up
        # its periodic database counts (the app's pool belongs to the client's own loop)
        database = Database.connect({url!r}, settings)
        await count_tables_by_status(database)
        await count_overdue_deadlines(database)
        await count_failed_deadlines(database)
        await database.dispose()
        RECONCILE_PROBLEMS.set(0)  # a clean sweep of this worker
        # collected while this worker runs
        print("ready", flush=True)
        input()

asyncio.run(main())
"""


def _samples(directory: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in registry.collect()
        for sample in family.samples
    }


async def test_a_crashed_workers_gauges_stop_counting(tmp_path, database_url):
    environment = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "RAIZ_ENV": "test"}
    subprocess.run([sys.executable, "-c", DEAD_WORKER], cwd=ROOT, env=environment, check=True)
    worker = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(NEW_WORKER).format(url=database_url)],
        cwd=ROOT,
        env=environment,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
        samples = _samples(tmp_path)
    finally:
        assert worker.stdin is not None
        worker.stdin.close()
        worker.wait(timeout=60)
    assert samples[("raiz_db_pool_size", ())] == 5  # the new worker's pool only
    assert samples[("raiz_db_pool_capacity", ())] == 5 + 10
    assert samples[("raiz_db_pool_checked_out", ())] < 5
    assert samples[("raiz_deadlines_overdue", ())] == 0
    assert samples[("raiz_deadlines_failed", ())] == 0
    assert samples[("raiz_tables", (("status", "running"),))] == 0
    assert samples[("raiz_ledger_reconcile_problems", ())] == 0
