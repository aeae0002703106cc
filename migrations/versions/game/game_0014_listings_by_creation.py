"""game: tables and users indexed by creation time (their keyset-paged listings)

``GET /tables`` (newest first, every status unless one is asked for) and ``GET /admin/users``
(oldest first) page by their last row since this release.  Without an index on the creation
time alone, a page without a status filter read and sorted every table ever created (and
every user); with it, a page reads its own rows, as ``game_0006`` did for the rounds.

Revision ID: game_0014
Revises: game_0013
Create Date: 2026-11-30 20:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "game_0014"
down_revision: str | Sequence[str] | None = "game_0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_tables_created_at", "tables", ["created_at"], schema="game")
    op.create_index("ix_users_created_at", "users", ["created_at"], schema="game")


def downgrade() -> None:
    op.drop_index("ix_users_created_at", table_name="users", schema="game")
    op.drop_index("ix_tables_created_at", table_name="tables", schema="game")
