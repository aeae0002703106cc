"""timers: a failed deadline waits before its next attempt

Revision ID: game_0004
Revises: game_0003
Create Date: 2026-11-30 07:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "game_0004"
down_revision: str | Sequence[str] | None = "game_0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "deadlines",
        sa.Column("retry_at", sa.DateTime(timezone=True), nullable=True),
        schema="game",
    )


def downgrade() -> None:
    op.drop_column("deadlines", "retry_at", schema="game")
