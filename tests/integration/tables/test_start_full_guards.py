"""``TableService.start_full`` (the seat-release job's start of a full table) starts an open
table only: a table that started, or was cancelled, between the job's listing and its lock
is left as it is."""

from __future__ import annotations

import uuid

import pytest

from app.rng_api import RngServices
from app.tables.runtime import TableRuntime
from app.tables.service import TableService
from tests.integration.tables.scenario import SLOW_TIMERS, db_session, start_game

pytestmark = pytest.mark.asyncio


async def test_start_full_leaves_a_running_table_as_it_is(client, settings):
    game = await start_game(client, settings, players=2, options={"lives": 3, **SLOW_TIMERS})
    before = await game.view(0)
    runtime = TableRuntime(settings, RngServices.from_settings(settings), lambda _: None)
    async with db_session(settings) as session:
        assert await TableService(runtime.context(session)).start_full(uuid.UUID(game.id)) is False
        await session.commit()
    assert await game.view(0) == before
