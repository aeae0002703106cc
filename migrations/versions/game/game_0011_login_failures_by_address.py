"""game: failed logins are also counted by client address

Login throttling counted failed logins per username only, so anybody could lock a player out
of their account for the whole window with ``RAIZ_LOGIN_MAX_FAILURES`` wrong passwords.  It
now counts them per username and client (that limit), per username from every client
(``RAIZ_LOGIN_MAX_FAILURES_PER_ACCOUNT``) and per client for every username
(``RAIZ_LOGIN_MAX_FAILURES_PER_ADDRESS``).  ``client_key`` is what a client is: its IPv4
address, or its IPv6 address's /64 network (``app.accounts.service.client_key``); the failures
recorded before this keep their address as their key (they expire within the window).

Revision ID: game_0011
Revises: game_0010
Create Date: 2026-11-30 18:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "game_0011"
down_revision: str | Sequence[str] | None = "game_0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("login_failures", sa.Column("client_key", sa.String(length=64)), schema="game")
    op.execute("UPDATE game.login_failures SET client_key = remote_address")
    op.create_index(
        "ix_login_failures_client_key_at", "login_failures", ["client_key", "at"], schema="game"
    )


def downgrade() -> None:
    op.drop_index("ix_login_failures_client_key_at", table_name="login_failures", schema="game")
    op.drop_column("login_failures", "client_key", schema="game")
