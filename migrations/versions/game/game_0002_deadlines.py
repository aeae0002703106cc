"""timers: durable deadlines

Revision ID: game_0002
Revises: game_0001
Create Date: 2026-11-29 15:27:26.902838
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "game_0002"
down_revision: str | Sequence[str] | None = "game_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "deadlines",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("table_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(length=8), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("handled_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'fired', 'stale', 'failed')", name=op.f("ck_deadlines_status")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deadlines")),
        schema="game",
    )
    op.create_index(
        "ix_deadlines_pending_due",
        "deadlines",
        ["due_at"],
        unique=False,
        schema="game",
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_index(
        op.f("ix_deadlines_table_id"), "deadlines", ["table_id"], unique=False, schema="game"
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_deadlines_table_id"), table_name="deadlines", schema="game")
    op.drop_index(
        "ix_deadlines_pending_due",
        table_name="deadlines",
        schema="game",
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.drop_table("deadlines", schema="game")
