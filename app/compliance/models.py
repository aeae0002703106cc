"""Tables of compliance (schema ``game``), all insert-only but the queue of unappended
rounds: database triggers refuse UPDATE, DELETE and TRUNCATE (migrations ``compliance_0001``
and ``compliance_0002``).

* ``signing_keys``: every public key that ever signed, kept forever (rotations add rows);
* ``round_signatures``: one per finished round: the record, its hash, key id, signature;
* ``merkle_leaves``: the append-only sequence of signed rounds the checkpoints cover;
* ``pending_leaves``: the signed rounds no checkpoint has appended yet (a trigger adds each
  signature's row; a checkpoint deletes the rows of the rounds it appends, and a guard
  trigger refuses any other delete: ``compliance_0006``);
* ``merkle_nodes``: the hash of every complete subtree of those leaves (what roots and
  inclusion proofs read, a few rows each, instead of every leaf);
* ``checkpoints``: signed RFC 6962 tree heads over a prefix of the leaves;
* ``access_log``: who read what, when, through the compliance routes and commands;
* ``audit_sweeps``: each run of the scheduler's audit sweep (ledger reconciliation and
  re-verification of newly signed rounds) and what it found.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    SmallInteger,
    String,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.types import DateTime

from app.db.base import GameBase

__all__ = (
    "AccessLogEntry",
    "AuditSweep",
    "Checkpoint",
    "MerkleLeaf",
    "MerkleNode",
    "PendingLeaf",
    "RoundSignature",
    "SigningKey",
)

APPEND_ONLY_TABLES = (
    "signing_keys",
    "round_signatures",
    "merkle_leaves",
    "merkle_nodes",
    "checkpoints",
    "access_log",
    "audit_sweeps",
)
"""Compliance tables the migration protects with triggers."""


class SigningKey(GameBase):
    """A public key that signs (or signed) round records and checkpoints."""

    __tablename__ = "signing_keys"

    key_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    algorithm: Mapped[str] = mapped_column(String(16))
    """``ed25519``."""
    public_key: Mapped[bytes] = mapped_column(LargeBinary(32))
    """Raw 32-byte Ed25519 public key."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())
    """When the service first used the key."""


class RoundSignature(GameBase):
    """The signed record of one finished round (written in the round's last transaction)."""

    __tablename__ = "round_signatures"
    __table_args__ = (Index("ix_round_signatures_signed_at", "signed_at", "round_id"),)

    round_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("rounds.id"), primary_key=True)
    record: Mapped[dict[str, Any]] = mapped_column(JSONB)
    """The record that was signed (``app.compliance.record.round_record``)."""
    record_hash: Mapped[bytes] = mapped_column(LargeBinary(32))
    """SHA-256 of the record's canonical JSON: what is signed, and the Merkle leaf."""
    key_id: Mapped[str] = mapped_column(ForeignKey("signing_keys.key_id"))
    signature: Mapped[bytes] = mapped_column(LargeBinary(64))
    signed_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())


class MerkleLeaf(GameBase):
    """Position of a signed round in the checkpointed tree (assigned by checkpoints, in order)."""

    __tablename__ = "merkle_leaves"

    leaf_index: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    round_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("round_signatures.round_id"), unique=True
    )
    record_hash: Mapped[bytes] = mapped_column(LargeBinary(32))
    """The round's record hash (the leaf is ``SHA-256(0x00 ‖ record_hash)``)."""
    added_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())


class PendingLeaf(GameBase):
    """A signed round no checkpoint has appended yet.

    Added by the ``round_signatures_pending_leaf`` trigger in the signing transaction, so it
    is visible exactly when the signature is (also one whose transaction committed after a
    checkpoint it was signed before); deleted by the checkpoint that appends the round, and
    by no one before (the ``pending_leaves_until_appended`` trigger).
    """

    __tablename__ = "pending_leaves"

    round_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("round_signatures.round_id"), primary_key=True
    )


class MerkleNode(GameBase):
    """The hash of a complete subtree of the leaves: at ``level`` 0 a leaf's hash, above it
    the node hash of its two children (written with the leaves, by checkpoints)."""

    __tablename__ = "merkle_nodes"

    level: Mapped[int] = mapped_column(SmallInteger, primary_key=True, autoincrement=False)
    node_index: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    """The subtree covers leaves ``node_index << level`` to ``((node_index + 1) << level) - 1``."""
    hash: Mapped[bytes] = mapped_column(LargeBinary(32))


class Checkpoint(GameBase):
    """A signed tree head: the Merkle root of the first ``tree_size`` leaves."""

    __tablename__ = "checkpoints"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    tree_size: Mapped[int] = mapped_column(BigInteger)
    root: Mapped[bytes] = mapped_column(LargeBinary(32))
    key_id: Mapped[str] = mapped_column(ForeignKey("signing_keys.key_id"))
    signature: Mapped[bytes] = mapped_column(LargeBinary(64))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())
    origin: Mapped[str] = mapped_column(String(16))
    """``scheduled``, ``api`` or ``cli``."""
    created_by: Mapped[str | None] = mapped_column(String(64))
    """Who asked for it (user id, ``cli:<os user>``), None for the scheduler."""


class AccessLogEntry(GameBase):
    """One compliance read: who, what, when."""

    __tablename__ = "access_log"
    __table_args__ = (
        Index("ix_access_log_at", "at"),
        Index("ix_access_log_actor_at", "actor", "at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())
    actor: Mapped[str] = mapped_column(String(64))
    """A user id, or ``cli:<os user>`` for the command line."""
    role: Mapped[str] = mapped_column(String(16))
    action: Mapped[str] = mapped_column(String(48))
    """What was read: ``search_rounds``, ``replay_round``, ``export_round``..."""
    target: Mapped[str | None] = mapped_column(String(128))
    """The round, table or user it was about."""
    details: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    """Filters, counts, outcome."""


class AuditSweep(GameBase):
    """One run of the periodic audit sweep (``app.compliance.monitor``)."""

    __tablename__ = "audit_sweeps"
    __table_args__ = (
        CheckConstraint(
            "reconcile_kind IN ('full', 'incremental') "
            "AND (reconcile_kind = 'incremental') = (entries_after IS NOT NULL)",
            name="reconcile_kind",
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    started_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    worker: Mapped[str] = mapped_column(String(64))
    """``host:pid`` of the worker that ran it."""
    signed_after: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    """Rounds signed after this instant (exclusive; None: since the first round)..."""
    signed_up_to: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    """...and up to this one (inclusive) were re-verified, with every round of their tables."""
    rounds_verified: Mapped[int] = mapped_column(Integer)
    tables_failed: Mapped[int] = mapped_column(Integer)
    reconcile_problems: Mapped[int] = mapped_column(Integer)
    findings: Mapped[list[Any]] = mapped_column(JSONB, default=list)
    """The first failure of each failed table and the reconciliation problems (capped)."""
    reconcile_kind: Mapped[str] = mapped_column(String(16), server_default=text("'full'"))
    """``full`` (every check over the whole ledger) or ``incremental`` (``ledger.reconcile``)."""
    entries_after: Mapped[int | None] = mapped_column(BigInteger)
    """Incremental: the ledger entries with an id above this one were checked (None: full)..."""
    entries_up_to: Mapped[int | None] = mapped_column(BigInteger)
    """...and every entry id up to this mark is settled and checked: the next sweep starts
    after it (None: unknown, the next sweep runs in full; also every sweep before
    ``compliance_0005``)."""
    entries_checked: Mapped[int | None] = mapped_column(BigInteger)
    """Ledger entries the reconciliation checked (None before ``compliance_0005``)."""
