"""A request that fails in the database logs its traceback without the rows or the query
arguments: PostgreSQL's DETAIL quotes the failing row, SQLAlchemy's message the statement's
parameters, asyncpg's the argument it could not encode -- a deal's deck order, a password
hash, a seed."""

from __future__ import annotations

import json
import logging

import pytest
import structlog
from litestar.testing import AsyncTestClient
from sqlalchemy import text

from app.db.engine import create_engine
from app.logging import configure_logging
from app.main import create_app
from tests.helpers import auth
from tests.integration.tables.helpers import (
    create_table,
    operator,
    player,
    refuse_chance_records,
)

pytestmark = pytest.mark.asyncio

LEAKS = ("Failing row contains", "[parameters:", "DETAIL:")


def _logged(err: str) -> list[dict]:
    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]


async def test_a_deal_that_fails_to_be_written_does_not_log_the_deck(settings, database_url, capfd):
    # the app is made here, so that its log handler writes to the captured stderr
    async with AsyncTestClient(app=create_app(settings)) as client:
        await _fail_a_deal(client, settings, database_url, capfd)


async def _fail_a_deal(client, settings, database_url, capfd) -> None:
    op = await operator(client, settings)
    players = [await player(client, settings, f"player{i}", 1_000, op) for i in range(2)]
    table = await create_table(client, players[0][1], seat_count=2)
    # The database refuses the round's chance records (a stand-in for any failure while the
    # deal is written: a check, a timeout, a full disk).
    await refuse_chance_records(database_url)
    capfd.readouterr()
    for index, (_, token) in enumerate(players):
        response = await client.post(f"/tables/{table['id']}/seat", headers=auth(token))
        assert response.status_code == (201 if index == 0 else 500), response.text
    err = capfd.readouterr().err
    failures = [entry for entry in _logged(err) if entry["event"] == "unhandled_error"]
    assert failures and "test_no_chance" in failures[0]["exception"]  # still diagnosable
    assert "CheckViolationError" in failures[0]["exception"]
    for leak in LEAKS:
        assert leak not in err
    # the chance records of the round (the body column): not in the traceback
    assert '"type": "chance"' not in failures[0]["exception"]
    assert '\\"type\\": \\"chance\\"' not in err


async def test_database_errors_are_logged_without_row_values_or_arguments(settings, capfd):
    configure_logging("INFO", json=True)
    logger = structlog.get_logger("test")
    engine = create_engine(settings.database_url or "", settings)
    try:
        async with engine.connect() as connection:
            await connection.execute(
                text(
                    "CREATE TEMP TABLE hands (n int UNIQUE, cards text CHECK (length(cards) < 11))"
                )
            )
            await connection.execute(text("INSERT INTO hands VALUES (1, 'first')"))
            statements = [
                # check violation: DETAIL quotes the whole row
                ("INSERT INTO hands VALUES (2, :cards)", {"cards": "SECRET-AH-2C"}),
                # unique violation: DETAIL quotes the key
                ("INSERT INTO hands VALUES (1, :cards)", {"cards": "SECRET-KD"}),
                # client-side encoding error: asyncpg quotes the argument
                ("INSERT INTO hands VALUES (:n, 'y')", {"n": "SECRET-seed-hex"}),
            ]
            for statement, parameters in statements:
                try:
                    async with connection.begin_nested():
                        await connection.execute(text(statement), parameters)
                except Exception:
                    logger.exception("failed")
                else:
                    pytest.fail(statement)
    finally:
        await engine.dispose()
        logging.getLogger().handlers.clear()
    err = capfd.readouterr().err
    entries = [entry for entry in _logged(err) if entry["event"] == "failed"]
    assert len(entries) == 3
    assert "SECRET" not in err and "first" not in err
    for leak in LEAKS:
        assert leak not in err
    assert "hands_cards_check" in entries[0]["exception"]
    assert "UniqueViolationError" in entries[1]["exception"]
    assert "invalid input for query argument $1" in entries[2]["exception"]
