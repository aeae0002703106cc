"""Retention: rounds, their logs, signatures, checkpoints, the access log, the fee-rate history,
the applied actions and the ledger cannot be deleted or changed through the application (no
route deletes them; the database refuses)."""

from __future__ import annotations

import asyncpg
import pytest

pytestmark = pytest.mark.asyncio

KEPT_TABLES = (
    "game.rounds",
    "game.round_log",
    "game.round_results",
    "game.signing_keys",
    "game.round_signatures",
    "game.merkle_leaves",
    "game.checkpoints",
    "game.access_log",
    "game.fee_rates",
    "game.table_actions",
    "ledger.transfers",
    "ledger.entries",
    "ledger.settlements",
    "rng.reveals",
)


async def test_the_database_refuses_to_delete_or_change_kept_records(database_url):
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "INSERT INTO game.access_log (at, actor, role, action, details) "
            "VALUES (now(), 'x', 'compliance', 'search_rounds', '{}')"
        )
        for table in KEPT_TABLES:  # row triggers need rows; TRUNCATE's fire on any table
            with pytest.raises(asyncpg.PostgresError, match="append-only"):
                await connection.execute(f"TRUNCATE {table} CASCADE")
        for statement in ("DELETE FROM game.access_log", "UPDATE game.access_log SET actor = 'y'"):
            with pytest.raises(asyncpg.PostgresError, match="append-only"):
                await connection.execute(statement)
    finally:
        await connection.close()


async def test_no_route_deletes_anything(client):
    schema = (await client.get("/schema/openapi.json")).json()
    deleting = [
        path
        for path, operations in schema["paths"].items()
        if "delete" in operations and not path.startswith("/auth")
    ]
    assert deleting == []


async def test_the_active_public_key_is_published_before_it_first_signs(client):
    keys = (await client.get("/audit/public-keys")).json()
    assert [(key["key_id"], key["active"], key["created_at"]) for key in keys] == [
        ("dev1", True, None)
    ]
    assert len(bytes.fromhex(keys[0]["public_key"])) == 32


async def test_a_key_id_registered_with_another_key_stops_the_service_at_start(database_url):
    # A key id is never re-used: found at start-up, not in the last transaction of every
    # round (which would stop every table at its first round end).
    from litestar.testing import AsyncTestClient

    from app.config import ConfigurationError
    from app.main import create_app
    from tests.conftest import make_settings

    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "INSERT INTO game.signing_keys (key_id, algorithm, public_key, created_at) "
            "VALUES ('dev1', 'ed25519', $1, now())",
            b"\x01" * 32,
        )
    finally:
        await connection.close()
    with pytest.raises(BaseException) as raised:  # the lifespan's task group wraps it
        async with AsyncTestClient(app=create_app(make_settings(database_url))):
            pass
    error = raised.value
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    assert isinstance(error, ConfigurationError) and "'dev1'" in str(error)
