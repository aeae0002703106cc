"""``verify-all`` checks the Merkle leaves and every checkpoint against them, past the
append-only triggers: a missing leaf, a leaf that is not its round's signed record, a
checkpoint whose signature fails, and checkpoints signed with the service's own key over more
leaves than exist or over another root (the signature holds; only the tree can tell).  Also
the count of rounds still in play, which it reports and cannot verify."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable

import asyncpg
import pytest

from app.compliance.audit import verify_all
from app.compliance.signatures import signer_for
from app.compliance.signing import checkpoint_message
from app.db import Database
from tests.helpers import auth
from tests.integration.compliance.helpers import leaves, play_match, raw
from tests.integration.tables.scenario import start_game

pytestmark = pytest.mark.asyncio

Tamper = Callable[[asyncpg.Connection], Awaitable[Callable[[asyncpg.Connection], Awaitable[None]]]]


async def _audit(settings):
    database = Database.connect(settings.database_url, settings)
    try:
        return await verify_all(database, settings)
    finally:
        await database.dispose()


async def test_every_merkle_tampering_is_named(client, settings):
    match = await play_match(client, settings)
    response = await client.post("/compliance/checkpoints", headers=auth(match["operator"]))
    assert response.status_code == 200, response.text
    checkpoint = response.json()
    stored = await leaves(settings.database_url)
    assert checkpoint["tree_size"] == len(stored) >= 2
    assert (await _audit(settings)).ok
    signer = signer_for(settings)
    number = checkpoint["id"]

    async def row(connection):
        return await connection.fetchrow("SELECT * FROM game.checkpoints WHERE id = $1", number)

    async def put_back(original):
        async def restore(connection):
            await connection.execute(
                "UPDATE game.checkpoints SET tree_size = $2, root = $3, signature = $4 "
                "WHERE id = $1",
                number,
                original["tree_size"],
                original["root"],
                original["signature"],
            )

        return restore

    async def resign(connection, tree_size: int, root: bytes) -> None:
        original = await row(connection)
        head = {
            "tree_size": tree_size,
            "root": root.hex(),
            "created_at": original["created_at"].isoformat(),
            "key_id": original["key_id"],
        }
        await connection.execute(
            "UPDATE game.checkpoints SET tree_size = $2, root = $3, signature = $4 WHERE id = $1",
            number,
            tree_size,
            root,
            signer.sign(checkpoint_message(head)),
        )

    async def delete_a_leaf(connection):
        removed = await connection.fetchrow(
            "DELETE FROM game.merkle_leaves WHERE leaf_index = 0 RETURNING *"
        )

        async def restore(c):
            await c.execute(
                "INSERT INTO game.merkle_leaves VALUES ($1, $2, $3, $4)", *removed.values()
            )

        return restore

    async def change_a_leaf(connection):
        await connection.execute(
            "UPDATE game.merkle_leaves SET record_hash = sha256(record_hash) WHERE leaf_index = 0"
        )

        async def restore(c):
            await c.execute(
                "UPDATE game.merkle_leaves SET record_hash = $1 WHERE leaf_index = 0", stored[0][1]
            )

        return restore

    async def flip_the_signature(connection):
        original = await row(connection)
        signature = bytes(original["signature"])
        await connection.execute(
            "UPDATE game.checkpoints SET signature = $2 WHERE id = $1",
            number,
            bytes([signature[0] ^ 1]) + signature[1:],
        )
        return await put_back(original)

    async def cover_a_leaf_too_many(connection):
        original = await row(connection)
        await resign(connection, len(stored) + 1, bytes(original["root"]))
        return await put_back(original)

    async def sign_another_root(connection):
        original = await row(connection)
        await resign(connection, len(stored), hashlib.sha256(bytes(original["root"])).digest())
        return await put_back(original)

    at = f"checkpoint {number}"
    cases: dict[str, tuple[Tamper, list[tuple[str, str]]]] = {
        "a leaf deleted": (delete_a_leaf, [("leaf 0", "missing from the leaves")]),
        "a leaf changed": (
            change_a_leaf,
            [
                ("leaf 0", f"is not the signed record of round {stored[0][0]}"),
                (at, "its root is not the root of the leaves it covers"),
            ],
        ),
        "the signature flipped": (
            flip_the_signature,
            [(at, f"the signature of checkpoint {number} does not verify")],
        ),
        "a leaf too many": (
            cover_a_leaf_too_many,
            [(at, f"covers {len(stored) + 1} leaves, only {len(stored)} exist")],
        ),
        "another root": (
            sign_another_root,
            [(at, "its root is not the root of the leaves it covers")],
        ),
    }
    for name, (tamper, expected) in cases.items():
        async with raw(settings.database_url) as connection:
            restore = await tamper(connection)
        try:
            report = await _audit(settings)
            found = [(where, f.check, f.item, f.reason) for where, f in report.failures]
            assert found == [("merkle", "inclusion", item, why) for item, why in expected], name
        finally:
            async with raw(settings.database_url) as connection:
                await restore(connection)
        assert (await _audit(settings)).ok, f"not restored after {name}"


async def test_rounds_in_play_are_counted_apart(client, settings):
    await play_match(client, settings, players=2, lives=1)
    finished = await _audit(settings)
    assert (finished.in_progress, finished.tables) == (0, 1) and finished.rounds >= 1
    await start_game(client, settings, players=2, tag="-in-play")
    report = await _audit(settings)
    assert report.ok
    assert (report.in_progress, report.tables, report.rounds) == (1, 1, finished.rounds)
