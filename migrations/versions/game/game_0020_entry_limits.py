"""game: players cap what they pay in entries per day, week and month

``game.entry_limits`` holds, per player and period, the limit in force and a loosening waiting
for its cooling-off (``app.accounts.limits``): read by every paid seat, so one small row per
period instead of the whole history.  The serving role updates those columns only, and
deletes nothing; a trigger refuses every role a change of a row's player or period.  ``game.entry_limit_changes`` keeps every change a player asked for (when,
what, when it applies): insert-only for the serving role and refused to every role by
triggers, as ``game.account_suspensions``.  ``ix_seats_user_id_seated_at`` finds a player's
entries within a window without reading all their seats.

Revision ID: game_0020
Revises: game_0019
Create Date: 2026-12-01 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "game_0020"
down_revision: str | Sequence[str] | None = "game_0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SERVICE_ROLE = "raiz_service"
MAX_CENTS = 10**12
UPDATED_COLUMNS = "limit_cents, pending_cents, pending_applies_at, updated_at"

REFUSE_CHANGE = """
CREATE FUNCTION game.refuse_entry_limit_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'game.entry_limit_changes is append-only: % refused', TG_OP
        USING HINT = 'A new limit is a new row; a change is kept.';
END;
$$
"""

GUARD_UPDATE = """
CREATE FUNCTION game.guard_entry_limits_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.user_id IS DISTINCT FROM OLD.user_id OR NEW.period IS DISTINCT FROM OLD.period THEN
        RAISE EXCEPTION 'game.entry_limits: the user and period of a limit cannot change';
    END IF;
    RETURN NEW;
END;
$$
"""


def upgrade() -> None:
    op.create_index("ix_seats_user_id_seated_at", "seats", ["user_id", "seated_at"], schema="game")
    op.create_table(
        "entry_limits",
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("period", sa.String(length=8), nullable=False),
        sa.Column("limit_cents", sa.BigInteger(), nullable=True),
        sa.Column("pending_cents", sa.BigInteger(), nullable=True),
        sa.Column("pending_applies_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "period IN ('day', 'week', 'month')", name=op.f("ck_entry_limits_period")
        ),
        sa.CheckConstraint(
            f"limit_cents IS NULL OR limit_cents BETWEEN 1 AND {MAX_CENTS}",
            name=op.f("ck_entry_limits_limit_cents"),
        ),
        sa.CheckConstraint(
            f"pending_cents IS NULL OR pending_cents BETWEEN 1 AND {MAX_CENTS}",
            name=op.f("ck_entry_limits_pending_cents"),
        ),
        sa.CheckConstraint(
            "pending_cents IS NULL OR pending_applies_at IS NOT NULL",
            name=op.f("ck_entry_limits_pending_applies_at"),
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["game.users.id"], name=op.f("fk_entry_limits_user_id_users")
        ),
        sa.PrimaryKeyConstraint("user_id", "period", name=op.f("pk_entry_limits")),
        schema="game",
    )
    # the default privileges of game_0005 granted UPDATE and DELETE on the new tables
    op.execute(f"REVOKE UPDATE, DELETE ON game.entry_limits FROM {SERVICE_ROLE}")
    op.execute(f"GRANT UPDATE ({UPDATED_COLUMNS}) ON game.entry_limits TO {SERVICE_ROLE}")
    op.execute(GUARD_UPDATE)  # as the mutable tables of game_0008: whose limit is fixed
    op.execute(
        "CREATE TRIGGER entry_limits_guard_update BEFORE UPDATE ON game.entry_limits "
        "FOR EACH ROW EXECUTE FUNCTION game.guard_entry_limits_update()"
    )
    op.create_table(
        "entry_limit_changes",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("period", sa.String(length=8), nullable=False),
        sa.Column("cents", sa.BigInteger(), nullable=True),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("applies_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=False),
        sa.CheckConstraint(
            "period IN ('day', 'week', 'month')", name=op.f("ck_entry_limit_changes_period")
        ),
        sa.CheckConstraint(
            f"cents IS NULL OR cents BETWEEN 1 AND {MAX_CENTS}",
            name=op.f("ck_entry_limit_changes_cents"),
        ),
        sa.CheckConstraint(
            "applies_at >= requested_at",
            name=op.f("ck_entry_limit_changes_applies_after_request"),
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["game.users.id"], name=op.f("fk_entry_limit_changes_user_id_users")
        ),
        sa.ForeignKeyConstraint(
            ["actor_id"], ["game.users.id"], name=op.f("fk_entry_limit_changes_actor_id_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_entry_limit_changes")),
        schema="game",
    )
    op.create_index(
        "ix_entry_limit_changes_user_id_id",
        "entry_limit_changes",
        ["user_id", "id"],
        schema="game",
    )
    op.execute(f"REVOKE UPDATE, DELETE ON game.entry_limit_changes FROM {SERVICE_ROLE}")
    op.execute(REFUSE_CHANGE)
    op.execute(
        "CREATE TRIGGER entry_limit_changes_append_only BEFORE UPDATE OR DELETE "
        "ON game.entry_limit_changes FOR EACH ROW "
        "EXECUTE FUNCTION game.refuse_entry_limit_change()"
    )
    op.execute(
        "CREATE TRIGGER entry_limit_changes_no_truncate BEFORE TRUNCATE "
        "ON game.entry_limit_changes FOR EACH STATEMENT "
        "EXECUTE FUNCTION game.refuse_entry_limit_change()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS entry_limit_changes_no_truncate ON game.entry_limit_changes")
    op.execute("DROP TRIGGER IF EXISTS entry_limit_changes_append_only ON game.entry_limit_changes")
    op.execute("DROP FUNCTION IF EXISTS game.refuse_entry_limit_change()")
    op.drop_table("entry_limit_changes", schema="game")
    op.execute("DROP TRIGGER IF EXISTS entry_limits_guard_update ON game.entry_limits")
    op.execute("DROP FUNCTION IF EXISTS game.guard_entry_limits_update()")
    op.drop_table("entry_limits", schema="game")
    op.drop_index("ix_seats_user_id_seated_at", table_name="seats", schema="game")
