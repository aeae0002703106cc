"""What a game row records of who paid, how much and at what fee is fixed once written
(migration ``game_0008``): a ``*_guard_update`` trigger per mutable game table refuses to
every role, the schemas' owner (a superuser here) included, a change of a table's entry, fee
snapshot, currency, game, preset, options, seat count, creator or creation time, of a seat's
table, owner, chair or seating time, and of the other identity columns; the columns written
once after the insert (a seat's match seat, entry and refund transfers, leaving time; a
token's revocation) are kept once set.  The serving role's side (it may update the other
columns only) is in ``test_db_roles.py``."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from tests.helpers import auth, login
from tests.integration.tables.helpers import create_table, operator, player

pytestmark = pytest.mark.asyncio

FIXED = {
    "tables": (
        "id",
        "game",
        "preset",
        "options",
        "seat_count",
        "entry_cents",
        "currency",
        "fee_bps",
        "fee_rate_id",
        "creator_id",
        "created_at",
    ),
    "seats": ("id", "table_id", "user_id", "position", "seated_at", "entry_cents"),
    "users": ("id", "created_at"),
    "access_tokens": ("id", "token_sha256", "user_id", "created_at"),
    "presence": ("table_id", "user_id"),
    "deadlines": ("id", "table_id", "kind", "token", "created_at"),
}
SET_ONCE = {
    "seats": ("engine_seat", "entry_transfer_id", "left_at", "refund_transfer_id"),
    "access_tokens": ("revoked_at",),
}
NOUNS = {
    "tables": "table",
    "seats": "seat",
    "users": "user",
    "access_tokens": "token",
    "presence": "presence",
    "deadlines": "deadline",
}
CHANGES = {
    "uuid": "gen_random_uuid()",
    "integer": "{column} + 1",
    "bigint": "{column} + 1",
    "character varying": "'x'",
    "jsonb": """'{{"changed": true}}'::jsonb""",
    "timestamp with time zone": "{column} - interval '1 second'",
    "bytea": "sha256({column})",
}
"""A value of each column type that differs from the stored one."""


async def _rows(connection: asyncpg.Connection) -> dict[str, list[asyncpg.Record]]:
    return {
        table: await connection.fetch(f"SELECT * FROM game.{table} ORDER BY 1, 2")
        for table in NOUNS
    }


async def _a_started_table_with_a_left_seat_and_a_revoked_token(client, settings) -> None:
    op = await operator(client, settings)
    players = [await player(client, settings, f"player{i}", 1_000, op) for i in range(3)]
    table = await create_table(client, players[0][1], seat_count=3, options={"lives": 2})
    first = players[0][1]
    for step in ("seat", "leave", "seat"):
        response = await client.post(f"/tables/{table['id']}/{step}", headers=auth(first))
        assert response.status_code in (200, 201), response.text
    for _, token in players[1:]:
        response = await client.post(f"/tables/{table['id']}/seat", headers=auth(token))
        assert response.status_code == 201, response.text
    again = await login(client, "player1")
    response = await client.post("/auth/logout", headers=auth(again))
    assert response.status_code == 204, response.text


async def test_identity_and_money_columns_cannot_change_even_for_the_owner(
    client, settings, database_url
):
    await _a_started_table_with_a_left_seat_and_a_revoked_token(client, settings)
    connection = await asyncpg.connect(database_url)
    try:
        types = {
            (row["table_name"], row["column_name"]): row["data_type"]
            for row in await connection.fetch(
                "SELECT table_name::text, column_name::text, data_type::text "
                "FROM information_schema.columns WHERE table_schema = 'game'"
            )
        }
        before = await _rows(connection)
        assert all(before.values()), {table: len(rows) for table, rows in before.items()}
        assert await connection.fetchval(
            "SELECT count(*) FROM game.seats WHERE left_at IS NOT NULL "
            "AND refund_transfer_id IS NOT NULL"
        )
        assert await connection.fetchval(
            "SELECT count(*) FROM game.access_tokens WHERE revoked_at IS NOT NULL"
        )
        attempts = [
            (table, column, CHANGES[types[(table, column)]].format(column=column), "cannot change")
            for table, columns in FIXED.items()
            for column in columns
        ] + [
            (table, column, value.format(column=column), "is set once")
            for table, columns in SET_ONCE.items()
            for column in columns
            for value in (CHANGES[types[(table, column)]], "NULL")
        ]
        for table, column, value, refusal in attempts:
            statement = f"UPDATE game.{table} SET {column} = {value} WHERE {column} IS NOT NULL"
            message = f"game.{table}: the {column} of {NOUNS[table]} .+ {refusal}"
            with pytest.raises(asyncpg.RaiseError, match=message):
                await connection.execute(statement)
        # nothing changed; each refusal named one table and column
        assert await _rows(connection) == before
        # what is not a money or identity fact the owner may still change (tests move times)
        await connection.execute("UPDATE game.tables SET fill_deadline_at = fill_deadline_at")
        await connection.execute("UPDATE game.deadlines SET due_at = due_at - interval '1 day'")
        await connection.execute("UPDATE game.users SET role = role")
    finally:
        await connection.close()


async def test_a_set_once_column_is_written_from_null_and_an_unchanged_value_passes(
    client, settings, database_url
):
    """The triggers refuse a change, not an UPDATE: a seat's entry transfer is written right
    after its row (the seat's id names it), a token's revocation when it is revoked, and
    rewriting a column with its own value is no change."""
    await _a_started_table_with_a_left_seat_and_a_revoked_token(client, settings)
    connection = await asyncpg.connect(database_url)
    try:
        seat = await connection.fetchrow(
            "SELECT * FROM game.seats WHERE left_at IS NULL ORDER BY id LIMIT 1"
        )
        assert seat["entry_transfer_id"] == f"entry:{seat['table_id']}:{seat['id']}"
        every = ", ".join(
            f"{column} = {column}" for column in (*FIXED["seats"], *SET_ONCE["seats"])
        )
        await connection.execute(f"UPDATE game.seats SET {every} WHERE id = $1", seat["id"])
        token = await connection.fetchval(
            "SELECT id FROM game.access_tokens WHERE revoked_at IS NULL ORDER BY id LIMIT 1"
        )
        revoked = await connection.fetchval(
            "UPDATE game.access_tokens SET revoked_at = now() WHERE id = $1 RETURNING revoked_at",
            token,
        )
        assert revoked is not None
        with pytest.raises(asyncpg.RaiseError, match=r"the revoked_at of token .+ is set once"):
            await connection.execute(
                "UPDATE game.access_tokens SET revoked_at = NULL WHERE id = $1", token
            )
        with pytest.raises(asyncpg.RaiseError, match=r"the table_id of seat .+ cannot change"):
            await connection.execute(
                "UPDATE game.seats SET table_id = $1 WHERE id = $2", uuid.uuid4(), seat["id"]
            )
    finally:
        await connection.close()


async def test_a_table_status_only_moves_forward_and_its_times_are_set_once(
    client, settings, database_url
):
    """``game_0009``: open -> running -> finished, or open -> cancelled; nothing else, for the
    owner too, and a table's start and end times, once written, are kept."""
    op = await operator(client, settings)
    players = [await player(client, settings, f"player{i}", 1_000, op) for i in range(2)]
    tokens = [token for _, token in players]
    finished = await create_table(client, tokens[0], seat_count=2)
    for token in tokens:
        response = await client.post(f"/tables/{finished['id']}/seat", headers=auth(token))
        assert response.status_code == 201, response.text
    cancelled = await create_table(client, tokens[0], seat_count=2)
    response = await client.post(f"/tables/{cancelled['id']}/cancel", headers=auth(tokens[0]))
    assert response.status_code == 200, response.text
    opened = await create_table(client, tokens[1], seat_count=2)
    connection = await asyncpg.connect(database_url)
    try:
        # the running table ends as the driver ends a match (the one move the trigger allows)
        await connection.execute(
            "UPDATE game.tables SET status = 'finished', ended_at = now() WHERE id = $1",
            uuid.UUID(finished["id"]),
        )
        before = await connection.fetch("SELECT * FROM game.tables ORDER BY id")
        refused = [
            (finished, "status = 'running'", "cannot go from finished to running"),
            (finished, "status = 'cancelled'", "cannot go from finished to cancelled"),
            (finished, "status = 'open'", "cannot go from finished to open"),
            (cancelled, "status = 'open'", "cannot go from cancelled to open"),
            (cancelled, "status = 'running'", "cannot go from cancelled to running"),
            (opened, "status = 'finished'", "cannot go from open to finished"),
            (finished, "started_at = started_at + interval '1 second'", "started_at .+ set once"),
            (finished, "ended_at = NULL", "ended_at .+ set once"),
            (cancelled, "ended_at = ended_at - interval '1 second'", "ended_at .+ set once"),
        ]
        for table, change, refusal in refused:
            with pytest.raises(asyncpg.RaiseError, match=refusal):
                await connection.execute(
                    f"UPDATE game.tables SET {change} WHERE id = $1", uuid.UUID(table["id"])
                )
        assert await connection.fetch("SELECT * FROM game.tables ORDER BY id") == before
        # an unchanged status or time passes (the driver saves a cancelled table again)
        await connection.execute(
            "UPDATE game.tables SET status = status, started_at = started_at, ended_at = ended_at"
        )
    finally:
        await connection.close()
