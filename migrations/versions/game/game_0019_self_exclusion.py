"""game: a player can exclude themselves for a period, which ends by itself

``users.suspended_until`` is set with ``suspended_at`` by a player's own self-exclusion
(``POST /players/me/self-exclusion``): the account is suspended until then, no operator can
lift it sooner, and a job lifts it then.  An operator's suspension leaves it null (until
reinstated).  ``account_suspensions.until`` records the period with the self-exclusion (a
column added to an insert-only table: its triggers and grants are unchanged).  The serving
role may update the new column of users, as ``suspended_at`` (``game_0017``).

Revision ID: game_0019
Revises: game_0018
Create Date: 2026-11-30 22:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "game_0019"
down_revision: str | Sequence[str] | None = "game_0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SERVICE_ROLE = "raiz_service"


def upgrade() -> None:
    op.add_column(
        "users",
        sa.Column("suspended_until", sa.DateTime(timezone=True), nullable=True),
        schema="game",
    )
    op.create_check_constraint(
        op.f("ck_users_suspended_until_while_suspended"),
        "users",
        "suspended_until IS NULL OR suspended_at IS NOT NULL",
        schema="game",
    )
    op.execute(f"GRANT UPDATE (suspended_until) ON game.users TO {SERVICE_ROLE}")
    op.add_column(
        "account_suspensions",
        sa.Column("until", sa.DateTime(timezone=True), nullable=True),
        schema="game",
    )


def downgrade() -> None:
    op.drop_column("account_suspensions", "until", schema="game")
    op.execute(f"REVOKE UPDATE (suspended_until) ON game.users FROM {SERVICE_ROLE}")
    op.drop_constraint(
        op.f("ck_users_suspended_until_while_suspended"), "users", schema="game", type_="check"
    )
    op.drop_column("users", "suspended_until", schema="game")
