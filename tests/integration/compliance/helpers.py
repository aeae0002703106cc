"""Helpers for compliance tests: real matches over HTTP, users by role, raw SQL tampering,
synthetic signed rounds."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import asyncpg

from tests.helpers import auth, create_user, login
from tests.integration.tables.helpers import (
    FAST_TIMERS,
    create_table,
    operator,
    play_to_the_end,
    player,
)


async def play_match(
    client: Any,
    settings: Any,
    *,
    players: int = 3,
    lives: int = 3,
    entry_cents: int = 500,
    names: str = "player",
    operator_token: str | None = None,
) -> dict[str, Any]:
    """Seat ``players`` funded players (``<names>0``, ``<names>1``...) at a new table and let
    bots play it to the end (a new operator funds them unless ``operator_token`` is given).

    Returns the table id, the operator's token and the players' (user id, token) pairs.
    """
    op = operator_token or await operator(client, settings)
    seated = [await player(client, settings, f"{names}{i}", 1_000, op) for i in range(players)]
    table = await create_table(
        client,
        seated[0][1],
        seat_count=players,
        entry_cents=entry_cents,
        options={"lives": lives, **FAST_TIMERS},
    )
    for _, token in seated:
        response = await client.post(f"/tables/{table['id']}/seat", headers=auth(token))
        assert response.status_code == 201, response.text
    await play_to_the_end(client, table["id"], [token for _, token in seated])
    return {"table_id": table["id"], "operator": op, "players": seated}


async def staff(client: Any, settings: Any, name: str = "auditor") -> str:
    """A compliance user's token."""
    await create_user(settings, name, role="compliance")
    return await login(client, name)


@contextlib.asynccontextmanager
async def raw(url: str) -> AsyncIterator[asyncpg.Connection]:
    """A superuser connection that bypasses the append-only triggers (tampering on purpose)."""
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("SET session_replication_role = replica")
        yield connection
    finally:
        await connection.close()


async def sign_rounds(url: str, first: int, last: int) -> None:
    """Signed rounds ``first..last``, signed an hour ago a millisecond apart (signatures only:
    foreign keys and the append-only triggers are off for them, not the trigger that queues
    each for the next checkpoint, ``ENABLE ALWAYS``)."""
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("SET session_replication_role = replica")
        await connection.execute(
            "INSERT INTO game.signing_keys (key_id, algorithm, public_key, created_at) "
            "VALUES ('synthetic', 'ed25519', sha256('k'), now()) ON CONFLICT DO NOTHING"
        )
        await connection.execute(
            "INSERT INTO game.round_signatures "
            "(round_id, record, record_hash, key_id, signature, signed_at) "
            "SELECT gen_random_uuid(), '{}', sha256(('r' || i)::bytea), 'synthetic', "
            "sha512(('r' || i)::bytea), now() - interval '1 hour' + i * interval '1 ms' "
            "FROM generate_series($1::int, $2::int) i",
            first,
            last,
        )
    finally:
        await connection.close()


async def leaves(url: str) -> list[tuple[object, bytes]]:
    """Every Merkle leaf's round id and record hash, in leaf order."""
    connection = await asyncpg.connect(url)
    try:
        rows = await connection.fetch(
            "SELECT round_id, record_hash FROM game.merkle_leaves ORDER BY leaf_index"
        )
    finally:
        await connection.close()
    return [(row["round_id"], bytes(row["record_hash"])) for row in rows]
