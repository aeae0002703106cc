"""Checkpoints and inclusion proofs at scale: the tree grows for ten years, and every
compliance bundle, replay and verification carries inclusion proofs, so neither a checkpoint
nor a proof may read the whole tree (they read the stored complete subtrees, a logarithmic
number of rows), and both stay exactly the RFC 6962 roots and audit paths of the leaves."""

from __future__ import annotations

import anyio
import asyncpg
import pytest
from alembic import command
from sqlalchemy import text

from app.compliance.checkpoints import inclusion_proofs, make_checkpoint
from app.compliance.merkle import MerkleTree, leaf_hash, merkle_root, verify_inclusion
from app.config import Settings
from app.db import Database
from app.db.migrate import alembic_config
from tests.integration.compliance.helpers import leaves, sign_rounds

pytestmark = pytest.mark.asyncio

READS = """
SELECT COALESCE(SUM(seq_tup_read), 0) + COALESCE(SUM(idx_tup_fetch), 0)
FROM pg_stat_xact_user_tables WHERE schemaname = 'game' AND relname LIKE 'merkle%'
"""
"""Rows of the Merkle tables read so far in the current transaction."""


async def checkpoint(database: Database, settings: Settings) -> tuple[int, bytes]:
    """A new checkpoint's size and root."""
    async with database.session() as session:
        made, created = await make_checkpoint(session, settings, origin="cli")
        await session.commit()
    assert created
    return made.tree_size, bytes(made.root)


async def test_checkpoints_and_inclusion_proofs_read_a_logarithmic_part_of_the_tree(
    database_url, settings
):
    database = Database.connect(database_url, settings)
    try:
        await sign_rounds(database_url, 1, 1000)
        size, root = await checkpoint(database, settings)
        hashes = [leaf_hash(record) for _, record in await leaves(database_url)]
        assert size == 1000
        assert root == merkle_root(hashes)

        await sign_rounds(database_url, 1001, 1333)
        size, root = await checkpoint(database, settings)
        recorded = await leaves(database_url)
        hashes = [leaf_hash(record) for _, record in recorded]
        assert size == 1333
        assert root == merkle_root(hashes)

        tree = MerkleTree(hashes)
        wanted = {index: recorded[index][0] for index in (0, 1, 511, 512, 1000, 1331, 1332)}
        async with database.session() as session:
            before = int(await session.scalar(text(READS)) or 0)
            head, proofs = await inclusion_proofs(session, list(wanted.values()))
            read = int(await session.scalar(text(READS)) or 0) - before
            await session.rollback()
    finally:
        await database.dispose()
    assert head is not None
    assert head["tree_size"] == 1333
    assert bytes.fromhex(head["root"]) == root
    for index, round_id in wanted.items():
        proof = proofs[round_id]
        assert proof["leaf_index"] == index
        path = [bytes.fromhex(node) for node in proof["audit_path"]]
        assert path == tree.proof(index, 1333)
        assert verify_inclusion(hashes[index], index, 1333, path, root)
    # seven leaves and their audit paths (11 nodes each at most), not the 1333 leaves
    assert read < 7 * 2 * 11 + 7, read


async def test_the_migration_builds_the_stored_tree_of_existing_leaves(database_url, settings):
    """A database upgraded with leaves already checkpointed (the stored tree is new): the
    migration builds it, so proofs and the next checkpoint are those of the leaves."""
    database = Database.connect(database_url, settings)
    try:
        await sign_rounds(database_url, 1, 700)
        await checkpoint(database, settings)
        config = alembic_config(database_url)
        await database.dispose()
        await anyio.to_thread.run_sync(command.downgrade, config, "compliance_0002")
        await anyio.to_thread.run_sync(command.upgrade, config, "heads")
        database = Database.connect(database_url, settings)
        await sign_rounds(database_url, 701, 900)
        size, root = await checkpoint(database, settings)
        recorded = await leaves(database_url)
        hashes = [leaf_hash(record) for _, record in recorded]
        assert size == 900
        assert root == merkle_root(hashes)
        async with database.session() as session:
            _, proofs = await inclusion_proofs(session, [recorded[3][0]])
            await session.rollback()
        path = [bytes.fromhex(node) for node in proofs[recorded[3][0]]["audit_path"]]
        assert path == MerkleTree(hashes).proof(3, 900)
    finally:
        await database.dispose()


async def test_leaves_appended_without_the_stored_tree_are_proven_and_stored_next_time(
    database_url, settings
):
    """During a rolling deploy an older release's checkpoint appends leaves and signs a root
    without storing subtrees: proofs against it come from the leaves, and the next checkpoint
    stores the missing subtrees."""
    database = Database.connect(database_url, settings)
    try:
        await sign_rounds(database_url, 1, 300)
        await checkpoint(database, settings)
        await sign_rounds(database_url, 301, 400)
        await checkpoint(database, settings)
        connection = await asyncpg.connect(database_url)
        try:  # what the older release left: leaves 300..399 without their subtrees
            await connection.execute("SET session_replication_role = replica")
            await connection.execute(
                "DELETE FROM game.merkle_nodes WHERE (node_index + 1) << level > 300"
            )
        finally:
            await connection.close()
        recorded = await leaves(database_url)
        hashes = [leaf_hash(record) for _, record in recorded]
        async with database.session() as session:
            _, proofs = await inclusion_proofs(session, [recorded[350][0], recorded[5][0]])
            await session.rollback()
        for index in (350, 5):
            path = [bytes.fromhex(node) for node in proofs[recorded[index][0]]["audit_path"]]
            assert path == MerkleTree(hashes).proof(index, 400)
        await sign_rounds(database_url, 401, 450)
        size, root = await checkpoint(database, settings)
        hashes = [leaf_hash(record) for _, record in await leaves(database_url)]
        assert (size, root) == (450, merkle_root(hashes))
    finally:
        await database.dispose()
