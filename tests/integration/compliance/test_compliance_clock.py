"""Compliance dates on the database's clock: a checkpoint's date and the daily job's "is the
latest one young enough", and an access-log entry's date, whatever the worker's clock says
(docs/operations.md, "Clocks")."""

from __future__ import annotations

import datetime as dt

import asyncpg
import pytest

from app.compliance.checkpoints import make_checkpoint
from app.db import Database
from tests.helpers import auth, database_clock, worker_clock_off
from tests.integration.compliance.helpers import staff

pytestmark = pytest.mark.asyncio

DAY = dt.timedelta(days=1)


async def _checkpoint(settings, **options):
    database = Database.connect(settings.database_url, settings)
    try:
        async with database.session() as session:
            checkpoint, created = await make_checkpoint(session, settings, origin="cli", **options)
            await session.commit()
            return checkpoint, created
    finally:
        await database.dispose()


async def test_the_daily_checkpoint_is_judged_and_dated_on_the_databases_clock(
    settings, monkeypatch
):
    # Signed on a worker a day late, the checkpoint is dated now (the database's); the daily
    # job on a worker two days ahead finds it young and makes none (on its own clock it was
    # three days old, and every worker ahead would sign a checkpoint at each run).
    worker_clock_off(monkeypatch, -DAY)
    first, created = await _checkpoint(settings)
    assert created
    assert abs((first.created_at - await database_clock(settings)).total_seconds()) < 60
    monkeypatch.undo()
    worker_clock_off(monkeypatch, 2 * DAY)
    latest, created = await _checkpoint(settings, min_interval=DAY)
    assert not created and latest.id == first.id


async def test_a_compliance_read_is_logged_at_the_databases_time(client, settings, monkeypatch):
    token = await staff(client, settings)
    worker_clock_off(monkeypatch, -DAY)
    response = await client.get("/compliance/rounds", headers=auth(token))
    assert response.status_code == 200, response.text
    connection = await asyncpg.connect(settings.database_url)
    try:
        at = await connection.fetchval("SELECT max(at) FROM game.access_log")
    finally:
        await connection.close()
    assert abs((at - await database_clock(settings)).total_seconds()) < 60
