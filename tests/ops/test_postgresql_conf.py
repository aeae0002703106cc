"""``ops/deploy/postgresql.conf`` against a real PostgreSQL: what its logging settings make the
server write.

The slow-statement log (``log_min_duration_statement``) records every statement that runs
longer than its threshold. The service binds its values as parameters (asyncpg prepares every
statement), so with PostgreSQL's default ``log_parameter_max_length = -1`` the server log would
show a slow statement's values in full: a round still in play (the deal's log entry, every hand
and the stock in the table's state), password hashes, session tokens.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import asyncpg
import pytest

pytestmark = pytest.mark.asyncio

CONF = Path(__file__).resolve().parents[2] / "ops" / "deploy" / "postgresql.conf"
SETTING = re.compile(r"^\s*([a-z_]+)\s*=\s*('[^']*'|\S+)")


def conf_settings() -> dict[str, str]:
    """The settings the file sets, as written (quotes kept)."""
    found = {}
    for line in CONF.read_text().splitlines():
        match = SETTING.match(line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


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
                await connection.execute("SELECT set_config($1, $2, false)", name, value.strip("'"))
        await connection.execute("SET client_min_messages = log")
        secret = "the-stock-order-7f3a9c"
        await connection.fetchval("SELECT $1::text FROM pg_sleep(0.3)", secret)
        await asyncio.sleep(0.05)
    finally:
        await connection.close()
    # The statement was slow enough to be logged, so the scan below is not vacuous.
    assert any("duration:" in message for message in messages), messages
    assert not any(secret in message for message in messages), messages
