"""game: operators suspend and reinstate accounts; every change is kept

``users.suspended_at`` is set while an account is suspended (fraud, collusion, a player's own
request to stop playing): the account cannot log in, its tokens stop working and it cannot
sit or open a table.  The serving role may update that column only (as ``password_hash``,
``game_0012``).  ``game.account_suspensions`` keeps every suspension and reinstatement (who,
when, why): insert-only for the serving role and refused to every role by triggers, as the
other audit records.  A partial index finds the few suspended accounts (the periodic release
of their seats at tables that have not started).

Revision ID: game_0017
Revises: game_0016
Create Date: 2026-11-30 21:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "game_0017"
down_revision: str | Sequence[str] | None = "game_0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SERVICE_ROLE = "raiz_service"

REFUSE_CHANGE = """
CREATE FUNCTION game.refuse_suspension_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'game.account_suspensions is append-only: % refused', TG_OP
        USING HINT = 'A reinstatement is a new row; a suspension is kept.';
END;
$$
"""


def upgrade() -> None:
    op.add_column(
        "users", sa.Column("suspended_at", sa.DateTime(timezone=True), nullable=True), schema="game"
    )
    op.create_index(
        "ix_users_suspended",
        "users",
        ["id"],
        schema="game",
        postgresql_where=sa.text("suspended_at IS NOT NULL"),
    )
    op.execute(f"GRANT UPDATE (suspended_at) ON game.users TO {SERVICE_ROLE}")
    op.create_table(
        "account_suspensions",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "action IN ('suspend', 'reinstate')", name=op.f("ck_account_suspensions_action")
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["game.users.id"], name=op.f("fk_account_suspensions_user_id_users")
        ),
        sa.ForeignKeyConstraint(
            ["actor_id"], ["game.users.id"], name=op.f("fk_account_suspensions_actor_id_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_account_suspensions")),
        schema="game",
    )
    op.create_index(
        "ix_account_suspensions_user_id_id",
        "account_suspensions",
        ["user_id", "id"],
        schema="game",
    )
    # the default privileges of game_0005 granted UPDATE and DELETE on the new table
    op.execute(f"REVOKE UPDATE, DELETE ON game.account_suspensions FROM {SERVICE_ROLE}")
    op.execute(REFUSE_CHANGE)
    op.execute(
        "CREATE TRIGGER account_suspensions_append_only BEFORE UPDATE OR DELETE "
        "ON game.account_suspensions FOR EACH ROW EXECUTE FUNCTION game.refuse_suspension_change()"
    )
    op.execute(
        "CREATE TRIGGER account_suspensions_no_truncate BEFORE TRUNCATE "
        "ON game.account_suspensions FOR EACH STATEMENT "
        "EXECUTE FUNCTION game.refuse_suspension_change()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS account_suspensions_no_truncate ON game.account_suspensions")
    op.execute("DROP TRIGGER IF EXISTS account_suspensions_append_only ON game.account_suspensions")
    op.execute("DROP FUNCTION IF EXISTS game.refuse_suspension_change()")
    op.drop_table("account_suspensions", schema="game")
    op.execute(f"REVOKE UPDATE (suspended_at) ON game.users FROM {SERVICE_ROLE}")
    op.drop_index("ix_users_suspended", table_name="users", schema="game")
    op.drop_column("users", "suspended_at", schema="game")
