"""accounts: users, access tokens, login failures

Revision ID: game_0001
Revises:
Create Date: 2026-11-29 15:21:45.494881
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "game_0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = ("game",)
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("CREATE SCHEMA IF NOT EXISTS game")
    op.create_table(
        "login_failures",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column(
            "at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.Column("remote_address", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_failures")),
        schema="game",
    )
    op.create_index(
        "ix_login_failures_username_at",
        "login_failures",
        ["username", "at"],
        unique=False,
        schema="game",
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("username", sa.String(length=32), nullable=False),
        sa.Column("password_hash", sa.String(length=256), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "role IN ('player', 'compliance', 'operator')", name=op.f("ck_users_role")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("username", name=op.f("uq_users_username")),
        schema="game",
    )
    op.create_table(
        "access_tokens",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("token_sha256", sa.LargeBinary(length=32), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["game.users.id"], name=op.f("fk_access_tokens_user_id_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_access_tokens")),
        sa.UniqueConstraint("token_sha256", name=op.f("uq_access_tokens_token_sha256")),
        schema="game",
    )
    op.create_index(
        op.f("ix_access_tokens_user_id"), "access_tokens", ["user_id"], unique=False, schema="game"
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_access_tokens_user_id"), table_name="access_tokens", schema="game")
    op.drop_table("access_tokens", schema="game")
    op.drop_table("users", schema="game")
    op.drop_index("ix_login_failures_username_at", table_name="login_failures", schema="game")
    op.drop_table("login_failures", schema="game")
    op.execute("DROP SCHEMA IF EXISTS game")
