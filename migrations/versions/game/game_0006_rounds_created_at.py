"""tables: rounds indexed by start time (the compliance search, newest first)

``GET /compliance/rounds`` lists rounds newest first, optionally from/to a start time: without
an index PostgreSQL read and sorted every round ever played for each page (1.2 s at 600,000
rounds, past the statement timeout at a few million); with it, a page reads its own rows.

Revision ID: game_0006
Revises: game_0005
Create Date: 2026-11-30 10:15:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "game_0006"
down_revision: str | Sequence[str] | None = "game_0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_rounds_created_at", "rounds", ["created_at"], unique=False, schema="game")


def downgrade() -> None:
    op.drop_index("ix_rounds_created_at", table_name="rounds", schema="game")
