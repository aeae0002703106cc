"""game: devices a player logged in from keep logging in while strangers lock the account

A successful login issues a *device token* (only its SHA-256 is stored, in
``game.login_devices``); a login that presents a live one for its username is counted by that
device alone (``login_failures.device_id``), not by the per-account and per-address limits a
stranger's guesses from many addresses can fill.  The serving role inserts, reads and deletes
devices (expired ones, the oldest beyond a player's limit, all of a player's when an operator
sets a new password); it never updates one.

Revision ID: game_0018
Revises: game_0017
Create Date: 2026-11-30 21:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "game_0018"
down_revision: str | Sequence[str] | None = "game_0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SERVICE_ROLE = "raiz_service"


def upgrade() -> None:
    op.create_table(
        "login_devices",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("token_sha256", sa.LargeBinary(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["game.users.id"], name=op.f("fk_login_devices_user_id_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_devices")),
        sa.UniqueConstraint("token_sha256", name=op.f("uq_login_devices_token_sha256")),
        schema="game",
    )
    op.create_index(
        "ix_login_devices_user_id_created_at",
        "login_devices",
        ["user_id", "created_at"],
        schema="game",
    )
    op.create_index("ix_login_devices_expires_at", "login_devices", ["expires_at"], schema="game")
    # the default privileges of game_0005 granted UPDATE too
    op.execute(f"REVOKE UPDATE ON game.login_devices FROM {SERVICE_ROLE}")
    op.add_column("login_failures", sa.Column("device_id", sa.Uuid(), nullable=True), schema="game")
    op.create_index(
        "ix_login_failures_device_id_at",
        "login_failures",
        ["device_id", "at"],
        schema="game",
        postgresql_where=sa.text("device_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_login_failures_device_id_at", table_name="login_failures", schema="game")
    op.drop_column("login_failures", "device_id", schema="game")
    op.drop_table("login_devices", schema="game")
