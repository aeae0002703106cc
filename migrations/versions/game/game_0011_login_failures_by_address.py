"""game: failed logins are also counted by client address

Login throttling counted failed logins per username only, so anybody could lock a player out
of their account for the whole window with ``RAIZ_LOGIN_MAX_FAILURES`` wrong passwords.  It
now counts them per username and address (that limit), per username from all addresses
(``RAIZ_LOGIN_MAX_FAILURES_PER_ACCOUNT``) and per address for all usernames
(``RAIZ_LOGIN_MAX_FAILURES_PER_ADDRESS``); the last two need this index on the address.

Revision ID: game_0011
Revises: game_0010
Create Date: 2026-11-30 18:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "game_0011"
down_revision: str | Sequence[str] | None = "game_0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_login_failures_remote_address_at",
        "login_failures",
        ["remote_address", "at"],
        schema="game",
    )


def downgrade() -> None:
    op.drop_index("ix_login_failures_remote_address_at", table_name="login_failures", schema="game")
