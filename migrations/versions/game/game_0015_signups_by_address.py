"""game: a player's sign-up records the client it came from

``POST /auth/signup`` accepts at most ``RAIZ_SIGNUP_MAX_PER_ADDRESS`` (20) sign-ups from one
client within ``RAIZ_SIGNUP_WINDOW_S`` (an hour): users are never deleted, and each sign-up
costs a password hash, so a script creating accounts without end would grow the users table
for good and hold the hashing threads.  ``signup_client_key`` is the client key of a player's
own sign-up (its IPv4 address, or its IPv6 address's /64 network); users created by an
operator, the command line or before this release have none.  The serving role inserts it and
never updates it.

Revision ID: game_0015
Revises: game_0014
Create Date: 2026-11-30 20:20:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "game_0015"
down_revision: str | Sequence[str] | None = "game_0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("users", sa.Column("signup_client_key", sa.String(length=64)), schema="game")
    op.create_index(
        "ix_users_signup_client_key_created_at",
        "users",
        ["signup_client_key", "created_at"],
        schema="game",
    )


def downgrade() -> None:
    op.drop_index("ix_users_signup_client_key_created_at", table_name="users", schema="game")
    op.drop_column("users", "signup_client_key", schema="game")
