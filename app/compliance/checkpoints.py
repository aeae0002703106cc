"""Checkpoints: signed RFC 6962 tree heads over every signed round, and inclusion proofs.

A checkpoint appends the rounds signed since the last one to ``game.merkle_leaves`` (in the
order they were signed, then by round id): those of ``game.pending_leaves``, the queue a
trigger adds each signature to in its own transaction, so a signature whose transaction
committed after a checkpoint it was signed before is appended by the next one, and finding
them reads the queue, not ten years of signatures.  It stores the hashes of the complete
subtrees they complete in ``game.merkle_nodes`` (PostgreSQL's ``sha256``, the RFC 6962 leaf
and node hashes), computes the Merkle root of all leaves from those and signs
``{tree_size, root, created_at, key_id}``.  A root or an audit path reads O(log n) stored
subtrees, never the whole tree: the tree grows for ten years and every compliance bundle
carries audit paths.  Checkpoints are made one at a time (a
transaction-level advisory lock), so leaf indexes are gap-free and a leaf never moves: every
older checkpoint is the root of a prefix of the same sequence.  The scheduler makes one
daily by default (``RAIZ_CHECKPOINT_INTERVAL_S``); ``raiz audit checkpoint`` and
``POST /compliance/checkpoints`` make one on demand.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

import structlog
from prometheus_client import Gauge
from sqlalchemy import BigInteger, Uuid, and_, any_, bindparam, delete, func, or_, select, text
from sqlalchemy.dialects.postgresql import ARRAY

from app.compliance.loader import checkpoint_dict
from app.compliance.merkle import (
    EMPTY_ROOT,
    MerkleTree,
    Node,
    leaf_hash,
    proof_ranges,
    subtree_hash,
    subtrees,
)
from app.compliance.models import Checkpoint, MerkleLeaf, MerkleNode, PendingLeaf
from app.compliance.signatures import register_key, signer_for
from app.compliance.signing import checkpoint_message
from app.compliance.verify import checkpoint_head
from app.db.base import transaction_clock, utcnow

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings
    from app.db import Database

__all__ = (
    "PENDING_ROUNDS",
    "CheckpointJob",
    "count_pending_rounds",
    "inclusion_proofs",
    "latest_checkpoint",
    "make_checkpoint",
    "merkle_tree",
)

CHECKPOINT_LOCK_KEY: Final = 0x7261697A_63686B70
"""``pg_advisory_xact_lock`` key serializing checkpoints ("raizchkp")."""

logger = structlog.get_logger("raiz.compliance")

_LEAF_NODES = text(
    "INSERT INTO game.merkle_nodes (level, node_index, hash) "
    "SELECT 0, leaf_index, sha256(decode('00', 'hex') || record_hash) FROM game.merkle_leaves "
    "WHERE leaf_index >= :first AND leaf_index < :size"
)
"""Level 0 of the stored tree: ``SHA-256(0x00 ‖ record_hash)`` of leaves ``first..size-1``."""
_PARENT_NODES = text(
    "INSERT INTO game.merkle_nodes (level, node_index, hash) "
    "SELECT CAST(:level AS smallint), l.node_index / 2, "
    "sha256(decode('01', 'hex') || l.hash || r.hash) "
    "FROM game.merkle_nodes l JOIN game.merkle_nodes r "
    "ON r.level = l.level AND r.node_index = l.node_index + 1 "
    "WHERE l.level = CAST(:below AS smallint) AND l.node_index >= :first "
    "AND l.node_index % 2 = 0"
)
"""The subtrees of ``level`` completed by children from ``first`` on: ``SHA-256(0x01 ‖ left ‖
right)``."""
PENDING_ROUNDS = text(
    "SELECT p.round_id, s.record_hash, s.appended FROM game.pending_leaves p "
    "CROSS JOIN LATERAL (SELECT s.record_hash, s.signed_at, "
    "(SELECT l.leaf_index FROM game.merkle_leaves l WHERE l.round_id = p.round_id) IS NOT NULL "
    "AS appended FROM game.round_signatures s WHERE s.round_id = p.round_id LIMIT 1) s "
    "ORDER BY s.signed_at, p.round_id"
)
"""The queued rounds in leaf order (signing time, then round id), and whether each is a leaf
already (appended by a checkpoint of a release before the queue, during a rolling deploy).

A lookup by key in the signatures and in the leaves per queued round, whatever the planner
estimates of the queue (it churns daily, and an estimate from before the last checkpoint's
deletes is off): the ``LIMIT`` keeps the lateral subquery from being flattened into a join
that may scan every signature, and a scalar subquery is run per row, where an ``EXISTS``
may become a hashed subplan that reads every leaf."""


CHECKPOINT_INTERVAL = Gauge(
    "raiz_checkpoint_interval_seconds",
    "The configured Merkle checkpoint period (RAIZ_CHECKPOINT_INTERVAL_S).",
    multiprocess_mode="livemax",
)
OLDEST_PENDING = Gauge(
    "raiz_checkpoint_oldest_pending_timestamp_seconds",
    "Unix time the oldest signed round no checkpoint covers yet was signed; the current time "
    "when every signed round is covered (read from game.pending_leaves every 5 s).",
    multiprocess_mode="livemostrecent",
)
PENDING = Gauge(
    "raiz_checkpoint_pending_rounds",
    "Signed rounds no checkpoint covers yet (read from game.pending_leaves every 5 s).",
    multiprocess_mode="livemostrecent",
)
_OLDEST_PENDING = text(
    "SELECT count(*), min(s.signed_at) FROM game.pending_leaves p "
    "JOIN game.round_signatures s ON s.round_id = p.round_id"
)


async def count_pending_rounds(database: Database) -> None:
    """Refresh the gauges the "checkpoint overdue" alert watches: how many signed rounds wait
    for a checkpoint and since when (one row per queued round, a lookup by key each)."""
    async with database.session() as session:
        pending, oldest = (await session.execute(_OLDEST_PENDING)).one()
    PENDING.set(pending)
    OLDEST_PENDING.set(oldest.timestamp() if oldest is not None else utcnow().timestamp())


async def latest_checkpoint(session: AsyncSession) -> Checkpoint | None:
    """The most recent checkpoint, if any."""
    return await session.scalar(select(Checkpoint).order_by(Checkpoint.id.desc()).limit(1))


async def merkle_tree(session: AsyncSession, size: int | None = None) -> MerkleTree:
    """The tree of the first ``size`` leaves (all of them by default)."""
    query = select(MerkleLeaf.record_hash).order_by(MerkleLeaf.leaf_index)
    if size is not None:
        query = query.limit(size)
    hashes = (await session.scalars(query)).all()
    return MerkleTree([leaf_hash(bytes(record_hash)) for record_hash in hashes])


async def _grow_stored_tree(session: AsyncSession, size: int) -> None:
    """Store every complete subtree of the first ``size`` leaves not stored yet (those of the
    leaves appended since, and of any a release without the stored tree appended)."""
    stored = int(
        await session.scalar(
            select(func.coalesce(func.max(MerkleNode.node_index) + 1, 0)).where(
                MerkleNode.level == 0
            )
        )
        or 0
    )
    if stored >= size:
        return
    await session.execute(_LEAF_NODES, {"first": stored, "size": size})
    level = 1
    while size >> level:
        first = 2 * (stored >> level)  # the left child of the first subtree completed now
        await session.execute(_PARENT_NODES, {"level": level, "below": level - 1, "first": first})
        level += 1


async def _stored_nodes(session: AsyncSession, wanted: Iterable[Node]) -> dict[Node, bytes]:
    """The stored hashes of the subtrees ``wanted`` (one query; missing ones are left out)."""
    by_level: dict[int, list[int]] = {}
    for level, index in set(wanted):
        by_level.setdefault(level, []).append(index)
    if not by_level:
        return {}
    rows = await session.execute(
        select(MerkleNode.level, MerkleNode.node_index, MerkleNode.hash).where(
            or_(
                *(
                    and_(
                        MerkleNode.level == level,
                        MerkleNode.node_index
                        == any_(bindparam(None, sorted(indexes), type_=ARRAY(BigInteger))),
                    )
                    for level, indexes in sorted(by_level.items())
                )
            )
        )
    )
    return {(level, index): bytes(node) for level, index, node in rows}


async def make_checkpoint(
    session: AsyncSession,
    settings: Settings,
    *,
    origin: str,
    created_by: str | None = None,
    min_interval: dt.timedelta | None = None,
) -> tuple[Checkpoint, bool]:
    """Append newly signed rounds and sign a tree head; ``(checkpoint, created)``.

    With ``min_interval``, a checkpoint younger than that is returned instead (so several
    workers' daily jobs make one checkpoint a day).  The caller commits.
    """
    await session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": CHECKPOINT_LOCK_KEY})
    # the database's clock (after the lock): how old the latest checkpoint is, and this one's
    # date, are the same for every worker whatever its clock
    now = await transaction_clock(session)
    latest = await latest_checkpoint(session)
    if latest is not None and min_interval is not None and latest.created_at > now - min_interval:
        return latest, False
    # leaf indexes are gap-free from 0: the last one + 1 (the primary key's end, not a count)
    size = int(
        await session.scalar(select(func.coalesce(func.max(MerkleLeaf.leaf_index) + 1, 0))) or 0
    )
    queued = (await session.execute(PENDING_ROUNDS)).all()
    pending = [
        (round_id, record_hash) for round_id, record_hash, appended in queued if not appended
    ]
    for offset, (round_id, record_hash) in enumerate(pending):
        session.add(
            MerkleLeaf(
                leaf_index=size + offset,
                round_id=round_id,
                record_hash=bytes(record_hash),
                added_at=now,
            )
        )
    await session.flush()
    if queued:  # out of the queue once leaves (its guard trigger checks that they are)
        await session.execute(
            delete(PendingLeaf).where(
                PendingLeaf.round_id
                == any_(bindparam(None, [row[0] for row in queued], type_=ARRAY(Uuid)))
            ),
            execution_options={"synchronize_session": False},
        )
    tree_size = size + len(pending)
    await _grow_stored_tree(session, tree_size)
    root = EMPTY_ROOT
    if tree_size:
        root = subtree_hash(await _stored_nodes(session, subtrees(0, tree_size)), 0, tree_size)
    signer = signer_for(settings)
    await register_key(session, signer)
    head = {
        "tree_size": tree_size,
        "root": root.hex(),
        "created_at": now.isoformat(),
        "key_id": signer.key_id,
    }
    checkpoint = Checkpoint(
        tree_size=tree_size,
        root=root,
        key_id=signer.key_id,
        signature=signer.sign(checkpoint_message(head)),
        created_at=now,
        origin=origin,
        created_by=created_by,
    )
    session.add(checkpoint)
    await session.flush()
    assert checkpoint_head(checkpoint_dict(checkpoint)) == head
    logger.info("compliance_checkpoint", tree_size=tree_size, added=len(pending), origin=origin)
    return checkpoint, True


async def inclusion_proofs(
    session: AsyncSession, round_ids: Sequence[uuid.UUID]
) -> tuple[dict[str, Any] | None, dict[uuid.UUID, dict[str, Any]]]:
    """The latest checkpoint and, for each round it covers, its audit path."""
    checkpoint = await latest_checkpoint(session)
    if checkpoint is None or not round_ids:
        return None, {}
    leaves = (
        await session.execute(
            select(MerkleLeaf.round_id, MerkleLeaf.leaf_index).where(
                MerkleLeaf.round_id.in_(round_ids), MerkleLeaf.leaf_index < checkpoint.tree_size
            )
        )
    ).all()
    if not leaves:
        return checkpoint_dict(checkpoint), {}
    size = checkpoint.tree_size
    ranges = {index: proof_ranges(index, size) for _, index in leaves}
    wanted = {
        node for path in ranges.values() for start, end in path for node in subtrees(start, end)
    }
    nodes = await _stored_nodes(session, wanted)
    if len(nodes) == len(wanted):
        paths = {
            index: [subtree_hash(nodes, start, end).hex() for start, end in path]
            for index, path in ranges.items()
        }
    else:  # a checkpoint of a release without the stored tree, not grown since: the leaves
        tree = await merkle_tree(session, size)
        paths = {index: [node.hex() for node in tree.proof(index, size)] for index in ranges}
    return checkpoint_dict(checkpoint), {
        round_id: {"checkpoint_id": checkpoint.id, "leaf_index": index, "audit_path": paths[index]}
        for round_id, index in leaves
    }


class CheckpointJob:
    """The scheduler's periodic checkpoint (at most one per interval across workers)."""

    def __init__(self, database: Database, settings: Settings) -> None:
        self._database = database
        self._settings = settings
        CHECKPOINT_INTERVAL.set(settings.checkpoint_interval_s)

    async def run(self) -> None:
        """Make a checkpoint unless one is younger than 90 % of the interval."""
        interval = dt.timedelta(seconds=self._settings.checkpoint_interval_s * 0.9)
        async with self._database.session() as session:
            await make_checkpoint(
                session, self._settings, origin="scheduled", min_interval=interval
            )
            await session.commit()
