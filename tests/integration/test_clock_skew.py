"""``raiz_clock_skew_seconds``: each worker measures its host's clock against the database
server's, so that a host off NTP is seen (``RaizClockSkew``) before its webhook signatures
go stale and its logs stop lining up with the database's dates."""

from __future__ import annotations

import datetime as dt

import pytest
from prometheus_client import REGISTRY

from app.db import Database
from app.metrics import measure_clock_skew
from tests.helpers import worker_clock_off

pytestmark = pytest.mark.asyncio


@pytest.mark.parametrize("offset_s", [0, 90, -3_600])
async def test_the_gauge_is_the_hosts_clock_minus_the_databases(settings, monkeypatch, offset_s):
    worker_clock_off(monkeypatch, dt.timedelta(seconds=offset_s))
    database = Database.connect(settings.database_url, settings)
    try:
        skew = await measure_clock_skew(database)
    finally:
        await database.dispose()
    # the test's host and database share a clock: what is left is the shift, give or take
    # half a round trip
    assert abs(skew - offset_s) < 0.5
    assert REGISTRY.get_sample_value("raiz_clock_skew_seconds") == skew


async def test_every_worker_refreshes_the_gauge_with_its_other_gauges(client):
    # (the client's service runs its scheduler: the gauges' job runs every 5 s)
    import asyncio
    import time

    from app.metrics import CLOCK_SKEW

    CLOCK_SKEW.set(1_234.0)
    deadline = time.monotonic() + 15
    while REGISTRY.get_sample_value("raiz_clock_skew_seconds") == 1_234.0:
        assert time.monotonic() < deadline, "the gauge was not measured again"
        await asyncio.sleep(0.2)
    assert abs(REGISTRY.get_sample_value("raiz_clock_skew_seconds") or 0.0) < 0.5
