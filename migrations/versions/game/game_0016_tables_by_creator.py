"""game: tables indexed by creator and creation time

A player may create at most ``RAIZ_MAX_TABLES_CREATED_PER_HOUR`` (60) tables an hour, whatever
became of them: the open-table limit of ``game_0013`` alone let a script create and cancel
tables without end, and the ledger keeps every table's escrow account.  Creating a table
counts the creator's tables of the last hour through this index.

Revision ID: game_0016
Revises: game_0015
Create Date: 2026-11-30 20:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "game_0016"
down_revision: str | Sequence[str] | None = "game_0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_tables_creator_created_at", "tables", ["creator_id", "created_at"], schema="game"
    )


def downgrade() -> None:
    op.drop_index("ix_tables_creator_created_at", table_name="tables", schema="game")
