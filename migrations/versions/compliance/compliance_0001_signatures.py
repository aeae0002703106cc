"""compliance: signing keys, round signatures, Merkle leaves, checkpoints, access log

Every table is insert-only: triggers refuse UPDATE, DELETE and TRUNCATE.  The tables live in
the ``game`` schema (they refer to ``game.rounds``); the branch is separate so that it does
not race other ``game`` revisions.

Revision ID: compliance_0001
Revises: game_0003
Create Date: 2026-11-29 17:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "compliance_0001"
down_revision: str | Sequence[str] | None = "game_0003"
branch_labels: str | Sequence[str] | None = ("compliance",)
depends_on: str | Sequence[str] | None = None

APPEND_ONLY_TABLES = (
    "signing_keys",
    "round_signatures",
    "merkle_leaves",
    "checkpoints",
    "access_log",
)

REFUSE_CHANGE = """
CREATE FUNCTION game.refuse_compliance_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'game.% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING HINT = 'Compliance records are kept, never changed or deleted.';
END;
$$
"""


def upgrade() -> None:
    op.create_table(
        "signing_keys",
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("algorithm", sa.String(length=16), nullable=False),
        sa.Column("public_key", sa.LargeBinary(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key_id", name=op.f("pk_signing_keys")),
        schema="game",
    )
    op.create_table(
        "round_signatures",
        sa.Column("round_id", sa.Uuid(), nullable=False),
        sa.Column("record", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("record_hash", sa.LargeBinary(length=32), nullable=False),
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("signature", sa.LargeBinary(length=64), nullable=False),
        sa.Column("signed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["key_id"],
            ["game.signing_keys.key_id"],
            name=op.f("fk_round_signatures_key_id_signing_keys"),
        ),
        sa.ForeignKeyConstraint(
            ["round_id"], ["game.rounds.id"], name=op.f("fk_round_signatures_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("round_id", name=op.f("pk_round_signatures")),
        schema="game",
    )
    op.create_index(
        "ix_round_signatures_signed_at",
        "round_signatures",
        ["signed_at", "round_id"],
        unique=False,
        schema="game",
    )
    op.create_table(
        "merkle_leaves",
        sa.Column("leaf_index", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("round_id", sa.Uuid(), nullable=False),
        sa.Column("record_hash", sa.LargeBinary(length=32), nullable=False),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["round_id"],
            ["game.round_signatures.round_id"],
            name=op.f("fk_merkle_leaves_round_id_round_signatures"),
        ),
        sa.PrimaryKeyConstraint("leaf_index", name=op.f("pk_merkle_leaves")),
        sa.UniqueConstraint("round_id", name=op.f("uq_merkle_leaves_round_id")),
        schema="game",
    )
    op.create_table(
        "checkpoints",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("tree_size", sa.BigInteger(), nullable=False),
        sa.Column("root", sa.LargeBinary(length=32), nullable=False),
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("signature", sa.LargeBinary(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["key_id"],
            ["game.signing_keys.key_id"],
            name=op.f("fk_checkpoints_key_id_signing_keys"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_checkpoints")),
        schema="game",
    )
    op.create_table(
        "access_log",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("action", sa.String(length=48), nullable=False),
        sa.Column("target", sa.String(length=128), nullable=True),
        sa.Column("details", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_access_log")),
        schema="game",
    )
    op.create_index("ix_access_log_at", "access_log", ["at"], unique=False, schema="game")
    op.create_index(
        "ix_access_log_actor_at", "access_log", ["actor", "at"], unique=False, schema="game"
    )
    op.execute(REFUSE_CHANGE)
    for table in APPEND_ONLY_TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON game.{table} "
            "FOR EACH ROW EXECUTE FUNCTION game.refuse_compliance_change()"
        )
        op.execute(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON game.{table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION game.refuse_compliance_change()"
        )


def downgrade() -> None:
    for table in APPEND_ONLY_TABLES:
        op.execute(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON game.{table}")
        op.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON game.{table}")
    op.execute("DROP FUNCTION IF EXISTS game.refuse_compliance_change()")
    op.drop_index("ix_access_log_actor_at", table_name="access_log", schema="game")
    op.drop_index("ix_access_log_at", table_name="access_log", schema="game")
    op.drop_table("access_log", schema="game")
    op.drop_table("checkpoints", schema="game")
    op.drop_table("merkle_leaves", schema="game")
    op.drop_index("ix_round_signatures_signed_at", table_name="round_signatures", schema="game")
    op.drop_table("round_signatures", schema="game")
    op.drop_table("signing_keys", schema="game")
