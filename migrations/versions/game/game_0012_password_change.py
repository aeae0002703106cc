"""game: the serving role may replace a user's password hash

``POST /auth/password`` lets any user change their own password (the current one is checked
and throttled as a login; the user's other tokens are revoked).  ``game_0008`` left the users
table with no updatable column; the service now updates ``password_hash``, and only it: a
user's name, role, id and creation time stay out of its reach.

Revision ID: game_0012
Revises: game_0011
Create Date: 2026-11-30 19:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "game_0012"
down_revision: str | Sequence[str] | None = "game_0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SERVICE_ROLE = "raiz_service"


def upgrade() -> None:
    op.execute(f"GRANT UPDATE (password_hash) ON game.users TO {SERVICE_ROLE}")


def downgrade() -> None:
    op.execute(f"REVOKE UPDATE (password_hash) ON game.users FROM {SERVICE_ROLE}")
