"""``verify-all --jobs N``: worker processes, each in the parent's snapshot, report exactly
what one process reports, tampering included."""

from __future__ import annotations

import pytest

from app.compliance.audit import verify_all
from app.db import Database
from tests.integration.compliance.helpers import play_match, raw

pytestmark = [pytest.mark.asyncio, pytest.mark.round_tampering]


async def _report(settings, jobs: int):
    database = Database.connect(settings.database_url, settings)
    try:
        return await verify_all(database, settings, jobs=jobs)
    finally:
        await database.dispose()


def _figures(report):
    return (report.rounds, report.tables, report.checkpoints, report.in_progress)


async def test_worker_processes_report_what_one_process_reports(client, settings):
    first = await play_match(client, settings, players=2, lives=2)
    second = await play_match(
        client, settings, players=2, lives=2, names="other", operator_token=first["operator"]
    )
    alone, shared = await _report(settings, 1), await _report(settings, 2)
    assert alone.ok and shared.ok, (alone.failures, shared.failures)
    assert alone.tables == 2 and alone.rounds >= 2
    assert _figures(shared) == _figures(alone)
    assert shared.jobs == 2 and "in 2 processes" in shared.summary()

    # one byte of the second table's first deal: both find it, with the same reason
    async with raw(settings.database_url) as connection:
        row = await connection.fetchrow(
            "SELECT l.round_id, l.seq, l.body::text AS body FROM game.round_log l "
            "JOIN game.rounds r ON r.id = l.round_id "
            "WHERE r.table_id = $1 AND l.kind = 'event' AND l.body->>'type' = 'dealt' "
            "ORDER BY r.number, l.seq LIMIT 1",
            second["table_id"],
        )
        changed = row["body"].replace('"vira": ', '"vira": 1', 1)
        assert changed != row["body"]
        await connection.execute(
            "UPDATE game.round_log SET body = $3::jsonb WHERE round_id = $1 AND seq = $2",
            row["round_id"],
            row["seq"],
            changed,
        )
    alone, shared = await _report(settings, 1), await _report(settings, 2)
    assert [(where, failure.check) for where, failure in alone.failures] == [
        (str(row["round_id"]), "chain")
    ]
    assert shared.failures == alone.failures
    assert _figures(shared) == _figures(alone)


async def test_jobs_must_be_positive(settings):
    with pytest.raises(ValueError, match="at least 1"):
        await _report(settings, 0)


async def test_worker_processes_on_a_database_without_rounds(settings):
    report = await _report(settings, 2)
    assert report.ok and _figures(report) == (0, 0, 0, 0)
