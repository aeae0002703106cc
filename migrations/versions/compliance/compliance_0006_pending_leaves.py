"""compliance: the signed rounds no checkpoint has appended yet, kept in a small queue

A checkpoint found the rounds to append with an anti-join of every round signature against
every Merkle leaf: a read of ten years of signatures, every day.  It could not simply take the
signatures newer than the last checkpoint: a round's ``signed_at`` is set before its
transaction commits, so a transaction held open across a checkpoint commits a signature older
than that checkpoint, which must still be appended by the next one.

``game.pending_leaves`` holds the round id of every signature not yet appended.  A trigger on
``game.round_signatures`` adds the row in the signing transaction itself, so the row becomes
visible exactly when the signature does (a late commit is queued like any other); it is
``ENABLE ALWAYS``, so a bulk load under ``session_replication_role = replica`` queues its
signatures too (a logical-replication subscriber of these tables must not also subscribe to
``game.pending_leaves``).  A checkpoint reads the queue, appends those rounds and deletes their
rows in its own transaction: it reads what was signed since, not the history.

The queue is not a record: nothing in it is kept.  Its guard makes the delete safe all the
same, for every role: a row is deleted only once its round is a Merkle leaf (so no one can
take a signed round out of the tree's future by emptying the queue), never updated, and the
table is never truncated.  The serving role may select, insert (the trigger runs as the
signing role) and delete; not update.

Chosen over a nullable ``leaf_index`` on ``game.round_signatures`` (set when appended, with a
partial index on the unset ones): that updates an append-only compliance record whose triggers
refuse any change, would need UPDATE granted on it, rewrites every signature ever made in the
backfill and every new one once more when appended.

The backfill queues every signature without a leaf (one read of the history, here only).
Creating the trigger locks ``game.round_signatures`` against inserts until the migration
commits, so no signature commits between the backfill's read and the trigger: none is missed.
A checkpoint of the previous release (a rolling deploy) appends without deleting: the next
checkpoint deletes the rows of rounds already appended and does not append them twice.

Revision ID: compliance_0006
Revises: compliance_0005
Create Date: 2026-12-02 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "compliance_0006"
down_revision: str | Sequence[str] | None = "compliance_0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SERVICE_ROLE = "raiz_service"
"""The NOLOGIN group role ``compliance_0003`` grants (frozen at this revision)."""

QUEUE_SIGNED_ROUND = """
CREATE FUNCTION game.queue_signed_round() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO game.pending_leaves (round_id) VALUES (NEW.round_id);
    RETURN NULL;
END;
$$
"""
GUARD_PENDING_LEAF = """
CREATE FUNCTION game.guard_pending_leaf() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE'
       AND EXISTS (SELECT FROM game.merkle_leaves l WHERE l.round_id = OLD.round_id) THEN
        RETURN OLD;
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'game.pending_leaves: TRUNCATE refused'
            USING HINT = 'A signed round leaves the queue when a checkpoint appends it.';
    END IF;
    RAISE EXCEPTION 'game.pending_leaves: % of round % refused: it is not a Merkle leaf yet',
        TG_OP, OLD.round_id
        USING HINT = 'A signed round leaves the queue when a checkpoint appends it.';
END;
$$
"""


def upgrade() -> None:
    op.create_table(
        "pending_leaves",
        sa.Column("round_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["round_id"],
            ["game.round_signatures.round_id"],
            name=op.f("fk_pending_leaves_round_id_round_signatures"),
        ),
        sa.PrimaryKeyConstraint("round_id", name=op.f("pk_pending_leaves")),
        schema="game",
    )
    op.execute(GUARD_PENDING_LEAF)
    op.execute(
        "CREATE TRIGGER pending_leaves_until_appended BEFORE UPDATE OR DELETE "
        "ON game.pending_leaves FOR EACH ROW EXECUTE FUNCTION game.guard_pending_leaf()"
    )
    op.execute(
        "CREATE TRIGGER pending_leaves_no_truncate BEFORE TRUNCATE ON game.pending_leaves "
        "FOR EACH STATEMENT EXECUTE FUNCTION game.guard_pending_leaf()"
    )
    # what a checkpoint does: read, and delete what it appended (game_0005's default
    # privileges would give UPDATE too)
    op.execute(f"REVOKE ALL ON game.pending_leaves FROM {SERVICE_ROLE}")
    op.execute(f"GRANT SELECT, INSERT, DELETE ON game.pending_leaves TO {SERVICE_ROLE}")
    op.execute(QUEUE_SIGNED_ROUND)
    op.execute(
        "CREATE TRIGGER round_signatures_pending_leaf AFTER INSERT ON game.round_signatures "
        "FOR EACH ROW EXECUTE FUNCTION game.queue_signed_round()"
    )
    op.execute(
        "ALTER TABLE game.round_signatures ENABLE ALWAYS TRIGGER round_signatures_pending_leaf"
    )
    bind = op.get_bind()
    bind.execute(sa.text("SET LOCAL statement_timeout = 0"))  # once, over every signature
    bind.execute(
        sa.text(
            "INSERT INTO game.pending_leaves (round_id) SELECT s.round_id "
            "FROM game.round_signatures s WHERE NOT EXISTS "
            "(SELECT FROM game.merkle_leaves l WHERE l.round_id = s.round_id)"
        )
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS round_signatures_pending_leaf ON game.round_signatures")
    op.execute("DROP FUNCTION IF EXISTS game.queue_signed_round()")
    op.drop_table("pending_leaves", schema="game")
    op.execute("DROP FUNCTION IF EXISTS game.guard_pending_leaf()")
