"""A suspended player's seat listed at an open table that starts before the release gives it
up stays in the match with its entry in the pool: no refund out of a running table."""

from __future__ import annotations

import pytest

from app.tables.suspended import SuspendedSeats
from tests.integration.tables.helpers import create_table, operator, player
from tests.integration.tables.scenario import seat, suspended_seats_job
from tests.integration.tables.test_suspension import _active_seats, _set_suspended, _wallet

pytestmark = pytest.mark.asyncio


async def test_a_seat_whose_table_started_meanwhile_is_not_given_up_or_refunded(
    client, settings, monkeypatch
):
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 1_000, op)
    _, bia = await player(client, settings, "bia", 1_000, op)
    _, cid = await player(client, settings, "cid", 1_000, op)
    table = await create_table(client, op, seat_count=3)
    for token in (ana, bia):
        await seat(client, token, table["id"])
    await _set_suspended(settings, ana_id, True)  # suspended, the release not run yet
    real_give_up = SuspendedSeats._give_up

    async def started_meanwhile(self, table_id, user_id):
        # reinstated, the last seat taken (the table starts), then suspended again: the
        # release listed the seat while the table was open and reaches it once it runs
        await _set_suspended(settings, ana_id, False)
        await seat(client, cid, table["id"])
        await _set_suspended(settings, ana_id, True)
        return await real_give_up(self, table_id, user_id)

    monkeypatch.setattr(SuspendedSeats, "_give_up", started_meanwhile)
    async with suspended_seats_job(settings) as job:
        assert await job.release(ana_id) == 0
    assert await _active_seats(settings, ana_id) == [(table["id"], "running")]
    assert await _wallet(settings, ana_id) == 500
