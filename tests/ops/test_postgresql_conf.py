"""``ops/deploy/postgresql.conf``: every setting exists in PostgreSQL and takes its value,
and the server's own log never receives what the application keeps out of its log -- the
parameters of slow statements (a deal's card order, a password hash) or the DETAIL of a
failed write ("Failing row contains (...)").

The slow-statement log is also checked live: the service binds its values as parameters
(asyncpg prepares every statement), so with PostgreSQL's default
``log_parameter_max_length = -1`` a slow statement's log line would show them in full."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import asyncpg
import pytest

pytestmark = pytest.mark.asyncio

CONF = Path(__file__).resolve().parents[2] / "ops" / "deploy" / "postgresql.conf"


def conf_settings() -> dict[str, str]:
    found = {}
    for raw in CONF.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, value = line.partition("=")
        found[name.strip()] = value.strip().strip("'")
    return found


async def test_every_setting_exists_and_takes_its_value(database_url):
    conf = conf_settings()
    assert len(conf) >= 15
    connection = await asyncpg.connect(database_url)
    try:
        known = {
            row["name"]: row
            for row in await connection.fetch(
                "SELECT name, context, vartype, enumvals FROM pg_settings"
            )
        }
        for name, value in conf.items():
            assert name in known, f"{name} is not a PostgreSQL setting"
            row = known[name]
            if row["context"] in ("user", "superuser"):
                async with connection.transaction():
                    await connection.execute("SELECT set_config($1, $2, true)", name, value)
            elif row["vartype"] == "enum":
                assert value in row["enumvals"], f"{name} = {value}"
    finally:
        await connection.close()


async def test_the_server_log_gets_no_statement_parameters_or_row_values():
    conf = conf_settings()
    if int(re.sub(r"\D", "", conf.get("log_min_duration_statement", "-1")) or -1) >= 0:
        # slow statements are logged: without their bound values
        assert conf.get("log_parameter_max_length") == "0"
    assert conf.get("log_parameter_max_length_on_error", "0") == "0"
    # an error's DETAIL quotes the failing row or key
    assert conf.get("log_error_verbosity") == "terse"


async def test_the_slow_statement_log_shows_no_parameter(database_url):
    settings = conf_settings()
    assert "log_min_duration_statement" in settings
    connection = await asyncpg.connect(database_url)
    messages: list[str] = []
    connection.add_log_listener(
        lambda _, message: messages.append(f"{message.message} {message.detail}")
    )
    try:
        # The file's logging settings, for this session (all of them may be set per session
        # by a superuser), and its server log copied to us.
        for name, value in settings.items():
            if name.startswith("log_"):
                await connection.execute("SELECT set_config($1, $2, false)", name, value)
        await connection.execute("SET client_min_messages = log")
        secret = "the-stock-order-7f3a9c"
        await connection.fetchval("SELECT $1::text FROM pg_sleep(0.3)", secret)
        # until the statement's log line has reached the listener (not a fixed 0.05 s)
        async with asyncio.timeout(10):
            while not any("duration:" in message for message in messages):
                await asyncio.sleep(0.01)
    finally:
        await connection.close()
    # The statement was slow enough to be logged, so the scan below is not vacuous.
    assert any("duration:" in message for message in messages), messages
    assert not any(secret in message for message in messages), messages
