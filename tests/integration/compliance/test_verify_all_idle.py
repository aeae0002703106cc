"""``verify-all --jobs N`` under the production server's ``idle_in_transaction_session_timeout``
(60 s, ops/deploy/postgresql.conf): the parent keeps the snapshot its workers import open,
idle, for as long as they verify (minutes on a year of rounds), and the server must not end
it meanwhile."""

from __future__ import annotations

import asyncpg
import pytest

from app.compliance.audit import verify_all
from app.db import Database
from tests.integration.compliance.helpers import play_match

pytestmark = pytest.mark.asyncio


async def test_verify_all_in_processes_outlives_the_idle_in_transaction_timeout(client, settings):
    await play_match(client, settings, players=2, lives=2)
    connection = await asyncpg.connect(settings.database_url)
    try:  # the workers take longer than this to start: the parent sits idle that long
        name = await connection.fetchval("SELECT current_database()")
        await connection.execute(
            f'ALTER DATABASE "{name}" SET idle_in_transaction_session_timeout = 500'
        )
    finally:
        await connection.close()
    database = Database.connect(settings.database_url, settings)
    try:
        report = await verify_all(database, settings, jobs=2)
    finally:
        await database.dispose()
        # the fixture's own checks at teardown must not run under 500 ms (on a loaded
        # machine a pause between their statements would end their connection)
        connection = await asyncpg.connect(settings.database_url)
        try:
            await connection.execute(
                f'ALTER DATABASE "{name}" RESET idle_in_transaction_session_timeout'
            )
        finally:
            await connection.close()
    assert report.ok, report.failures
    assert report.rounds >= 1 and report.jobs == 2
