"""compliance: the stored Merkle tree (every complete subtree's hash), built from the leaves

Checkpoints and inclusion proofs read a few of these rows instead of every leaf (they loaded
and hashed the whole tree: seconds per compliance bundle after a few hundred thousand rounds,
past the statement timeout after a few million).  Insert-only, like every compliance table.

Revision ID: compliance_0004
Revises: compliance_0003
Create Date: 2026-11-30 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "compliance_0004"
down_revision: str | Sequence[str] | None = "compliance_0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The same statements as app.compliance.checkpoints (a migration never imports the app).
LEAF_NODES = (
    "INSERT INTO game.merkle_nodes (level, node_index, hash) "
    "SELECT 0, leaf_index, sha256(decode('00', 'hex') || record_hash) FROM game.merkle_leaves"
)
PARENT_NODES = (
    "INSERT INTO game.merkle_nodes (level, node_index, hash) "
    "SELECT CAST(:level AS smallint), l.node_index / 2, "
    "sha256(decode('01', 'hex') || l.hash || r.hash) "
    "FROM game.merkle_nodes l JOIN game.merkle_nodes r "
    "ON r.level = l.level AND r.node_index = l.node_index + 1 "
    "WHERE l.level = CAST(:below AS smallint) AND l.node_index % 2 = 0"
)


def upgrade() -> None:
    op.create_table(
        "merkle_nodes",
        sa.Column("level", sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column("node_index", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("hash", sa.LargeBinary(length=32), nullable=False),
        sa.PrimaryKeyConstraint("level", "node_index", name=op.f("pk_merkle_nodes")),
        schema="game",
    )
    op.execute(
        "CREATE TRIGGER merkle_nodes_append_only BEFORE UPDATE OR DELETE ON game.merkle_nodes "
        "FOR EACH ROW EXECUTE FUNCTION game.refuse_compliance_change()"
    )
    op.execute(
        "CREATE TRIGGER merkle_nodes_no_truncate BEFORE TRUNCATE ON game.merkle_nodes "
        "FOR EACH STATEMENT EXECUTE FUNCTION game.refuse_compliance_change()"
    )
    # the serving role appends and reads, as on every compliance table (compliance_0003): not
    # the UPDATE and DELETE that game_0005's default privileges give a new table
    op.execute("REVOKE ALL ON game.merkle_nodes FROM raiz_service")
    op.execute("GRANT SELECT, INSERT ON game.merkle_nodes TO raiz_service")
    bind = op.get_bind()
    bind.execute(sa.text("SET LOCAL statement_timeout = 0"))  # once, over every leaf
    size = int(bind.execute(sa.text("SELECT count(*) FROM game.merkle_leaves")).scalar_one())
    bind.execute(sa.text(LEAF_NODES))
    level = 1
    while size >> level:
        bind.execute(sa.text(PARENT_NODES), {"level": level, "below": level - 1})
        level += 1


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS merkle_nodes_no_truncate ON game.merkle_nodes")
    op.execute("DROP TRIGGER IF EXISTS merkle_nodes_append_only ON game.merkle_nodes")
    op.drop_table("merkle_nodes", schema="game")
