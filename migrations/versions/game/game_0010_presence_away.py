"""game: a player's own timers that ran out in a row, and when they last acted at the table

``game.presence`` gains ``timeouts_in_a_row`` (the timers that waited for the player and ran
out since the player's last action at that table; an action sets it back to 0) and
``acted_at`` (the player's last action there).  A living player with
``RAIZ_AWAY_AFTER_TIMEOUTS`` (3) of them is *away*: connected, maybe, but not playing.  When every
living player of a running table is away, the table freezes as when nobody is connected, and
if nobody acts within ``abandon_after`` the player who acted last wins (docs/tables.md).
Before this, a match whose players all left their socket open played itself for ever: a
timeout never closes, so no round ended and the entries stayed in escrow.

The serving role may update both columns (``game_0008`` grants columns one by one).

Revision ID: game_0010
Revises: game_0009
Create Date: 2026-11-30 15:50:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "game_0010"
down_revision: str | Sequence[str] | None = "game_0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SERVICE_ROLE = "raiz_service"


def upgrade() -> None:
    op.add_column(
        "presence",
        sa.Column("timeouts_in_a_row", sa.Integer(), server_default="0", nullable=False),
        schema="game",
    )
    op.add_column("presence", sa.Column("acted_at", sa.DateTime(timezone=True)), schema="game")
    op.create_check_constraint(
        op.f("ck_presence_timeouts_in_a_row_not_negative"),
        "presence",
        "timeouts_in_a_row >= 0",
        schema="game",
    )
    op.execute(f"GRANT UPDATE (timeouts_in_a_row, acted_at) ON game.presence TO {SERVICE_ROLE}")


def downgrade() -> None:
    op.execute(f"REVOKE UPDATE (timeouts_in_a_row, acted_at) ON game.presence FROM {SERVICE_ROLE}")
    op.drop_constraint(
        op.f("ck_presence_timeouts_in_a_row_not_negative"), "presence", schema="game"
    )
    op.drop_column("presence", "acted_at", schema="game")
    op.drop_column("presence", "timeouts_in_a_row", schema="game")
