"""Checkpoints: signed RFC 6962 tree heads over every signed round, and inclusion proofs.

A checkpoint appends the rounds signed since the last one to ``game.merkle_leaves`` (in the
order they were signed, then by round id), computes the Merkle root of all leaves and signs
``{tree_size, root, created_at, key_id}``.  Checkpoints are made one at a time (a
transaction-level advisory lock), so leaf indexes are gap-free and a leaf never moves: every
older checkpoint is the root of a prefix of the same sequence.  The scheduler makes one
daily by default (``RAIZ_CHECKPOINT_INTERVAL_S``); ``raiz audit checkpoint`` and
``POST /compliance/checkpoints`` make one on demand.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import structlog
from sqlalchemy import func, select, text

from app.compliance.loader import checkpoint_dict
from app.compliance.merkle import MerkleTree, leaf_hash
from app.compliance.models import Checkpoint, MerkleLeaf, RoundSignature
from app.compliance.signatures import register_key, signer_for
from app.compliance.signing import checkpoint_message
from app.compliance.verify import checkpoint_head
from app.db.base import utcnow

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings
    from app.db import Database

__all__ = (
    "CheckpointJob",
    "inclusion_proofs",
    "latest_checkpoint",
    "make_checkpoint",
    "merkle_tree",
)

CHECKPOINT_LOCK_KEY: Final = 0x7261697A_63686B70
"""``pg_advisory_xact_lock`` key serializing checkpoints ("raizchkp")."""

logger = structlog.get_logger("raiz.compliance")


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
    now = utcnow()
    latest = await latest_checkpoint(session)
    if latest is not None and min_interval is not None and latest.created_at > now - min_interval:
        return latest, False
    size = int(await session.scalar(select(func.count()).select_from(MerkleLeaf)) or 0)
    pending = (
        await session.execute(
            select(RoundSignature.round_id, RoundSignature.record_hash)
            .outerjoin(MerkleLeaf, MerkleLeaf.round_id == RoundSignature.round_id)
            .where(MerkleLeaf.round_id.is_(None))
            .order_by(RoundSignature.signed_at, RoundSignature.round_id)
        )
    ).all()
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
    tree = await merkle_tree(session)
    signer = signer_for(settings)
    await register_key(session, signer)
    head = {
        "tree_size": tree.size,
        "root": tree.root().hex(),
        "created_at": now.isoformat(),
        "key_id": signer.key_id,
    }
    checkpoint = Checkpoint(
        tree_size=tree.size,
        root=tree.root(),
        key_id=signer.key_id,
        signature=signer.sign(checkpoint_message(head)),
        created_at=now,
        origin=origin,
        created_by=created_by,
    )
    session.add(checkpoint)
    await session.flush()
    assert checkpoint_head(checkpoint_dict(checkpoint)) == head
    logger.info("compliance_checkpoint", tree_size=tree.size, added=len(pending), origin=origin)
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
    tree = await merkle_tree(session, checkpoint.tree_size)
    return checkpoint_dict(checkpoint), {
        round_id: {
            "checkpoint_id": checkpoint.id,
            "leaf_index": index,
            "audit_path": [node.hex() for node in tree.proof(index, checkpoint.tree_size)],
        }
        for round_id, index in leaves
    }


class CheckpointJob:
    """The scheduler's periodic checkpoint (at most one per interval across workers)."""

    def __init__(self, database: Database, settings: Settings) -> None:
        self._database = database
        self._settings = settings

    async def run(self) -> None:
        """Make a checkpoint unless one is younger than 90 % of the interval."""
        interval = dt.timedelta(seconds=self._settings.checkpoint_interval_s * 0.9)
        async with self._database.session() as session:
            await make_checkpoint(
                session, self._settings, origin="scheduled", min_interval=interval
            )
            await session.commit()
