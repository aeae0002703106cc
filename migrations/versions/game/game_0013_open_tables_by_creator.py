"""game: a player's tables waiting for players, by creator

A player may have at most ``RAIZ_MAX_OPEN_TABLES_PER_PLAYER`` (10) tables waiting for players:
each table opens an escrow account that the ledger keeps for good, so creating tables without
end would grow the ledger and fill the lobby.  Creating a table counts the creator's open
tables through this partial index.

Revision ID: game_0013
Revises: game_0012
Create Date: 2026-11-30 19:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "game_0013"
down_revision: str | Sequence[str] | None = "game_0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_tables_open_by_creator",
        "tables",
        ["creator_id"],
        schema="game",
        postgresql_where=sa.text("status = 'open'"),
    )


def downgrade() -> None:
    op.drop_index("ix_tables_open_by_creator", table_name="tables", schema="game")
