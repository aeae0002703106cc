"""``raiz deadlines failed | retry``: the operator's view of parked deadlines and the way back."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg

from app.cli import main


def _sql(database_url: str, query: str, *args):
    async def work():
        connection = await asyncpg.connect(database_url)
        try:
            return await connection.fetch(query, *args)
        finally:
            await connection.close()

    return asyncio.run(work())


def _deadline(database_url: str, status: str) -> int:
    (row,) = _sql(
        database_url,
        "INSERT INTO game.deadlines (table_id, kind, token, due_at, status, attempts, created_at,"
        " handled_at) VALUES ($1, 'game', '7', now() - interval '1 minute', $2, 8, now(), now())"
        " RETURNING id",
        uuid.uuid4(),
        status,
    )
    return int(row["id"])


def test_failed_lists_parked_deadlines_and_exits_one_while_there_are_any(cli, database_url):
    result = cli.invoke(main, ["deadlines", "failed"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "0 failed deadline(s)"
    parked = _deadline(database_url, "failed")
    _deadline(database_url, "fired")
    result = cli.invoke(main, ["deadlines", "failed"])
    assert result.exit_code == 1, result.output
    (line, summary) = result.output.strip().splitlines()
    assert line.split("\t")[0] == str(parked) and line.split("\t")[2:4] == ["game", "7"]
    assert summary == "1 failed deadline(s)"


def test_retry_requeues_the_named_or_every_failed_deadline_and_nothing_else(cli, database_url):
    first, second = _deadline(database_url, "failed"), _deadline(database_url, "failed")
    fired = _deadline(database_url, "fired")

    usage = cli.invoke(main, ["deadlines", "retry"])
    assert usage.exit_code == 2 and "--all" in usage.output
    usage = cli.invoke(main, ["deadlines", "retry", str(first), "--all"])
    assert usage.exit_code == 2

    # a fired deadline is never made pending again: it is refused by name and left alone
    result = cli.invoke(main, ["deadlines", "retry", str(first), str(fired)])
    assert result.exit_code == 2, result.output
    assert f"not failed deadlines: {fired}" in result.output
    rows = _sql(database_url, "SELECT id, status, attempts FROM game.deadlines ORDER BY id")
    assert [tuple(row) for row in rows] == [
        (first, "pending", 0),
        (second, "failed", 8),
        (fired, "fired", 8),
    ]

    result = cli.invoke(main, ["deadlines", "retry", "--all"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == str(second)
    rows = _sql(database_url, "SELECT status FROM game.deadlines ORDER BY id")
    assert [row["status"] for row in rows] == ["pending", "pending", "fired"]
