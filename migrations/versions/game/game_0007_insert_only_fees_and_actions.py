"""tables: the fee-rate history and the applied table actions are insert-only (triggers)

``game.fee_rates`` is the history of the platform fee (every change is a new row, the newest
is in force, each table keeps the id of the rate it snapshotted) and ``game.table_actions``
the record of every player action applied, with its request's hash (a retry is answered from
it).  Both are audit data; the code never updates or deletes either (there is no clean-up of old
action ids: each is also in its round's log, which is kept).  The serving role was
already granted only SELECT and INSERT on them (``game_0005``); triggers now refuse UPDATE,
DELETE and TRUNCATE to every role, the schemas' owner included, as on the rounds.

Revision ID: game_0007
Revises: game_0006
Create Date: 2026-11-30 12:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "game_0007"
down_revision: str | Sequence[str] | None = "game_0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INSERT_ONLY_TABLES = ("fee_rates", "table_actions")

REFUSE_CHANGE = """
CREATE FUNCTION game.refuse_record_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'game.% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING HINT = 'A new fee rate is a new row; an applied action is kept.';
END;
$$
"""


def upgrade() -> None:
    op.execute(REFUSE_CHANGE)
    for table in INSERT_ONLY_TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON game.{table} "
            "FOR EACH ROW EXECUTE FUNCTION game.refuse_record_change()"
        )
        op.execute(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON game.{table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION game.refuse_record_change()"
        )


def downgrade() -> None:
    for table in INSERT_ONLY_TABLES:
        op.execute(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON game.{table}")
        op.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON game.{table}")
    op.execute("DROP FUNCTION IF EXISTS game.refuse_record_change()")
