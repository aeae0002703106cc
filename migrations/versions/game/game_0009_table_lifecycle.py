"""game: a table's status moves only forward, and its start and end times are written once

A table is ``open`` until it fills (``running``) or is cancelled (``cancelled``: every entry
refunded, its escrow closed); a running table ends ``finished`` (settled, its escrow closed).
``finished`` and ``cancelled`` are final.  ``tables_lifecycle`` (BEFORE UPDATE, every role, the
schemas' owner included) refuses any other change of status, and a second value of
``started_at`` or ``ended_at``: a settled table cannot be made to run or be cancelled again,
nor its times rewritten.

Revision ID: game_0009
Revises: game_0008
Create Date: 2026-11-30 13:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "game_0009"
down_revision: str | Sequence[str] | None = "game_0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TRANSITIONS = (("open", "running"), ("open", "cancelled"), ("running", "finished"))
"""Every change of a table's status there is (frozen at this revision)."""

LIFECYCLE = """
CREATE FUNCTION game.guard_table_lifecycle() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status
        AND (OLD.status, NEW.status) NOT IN ({transitions}) THEN
        RAISE EXCEPTION 'game.tables: table % cannot go from % to %', OLD.id, OLD.status,
            NEW.status USING HINT = 'open -> running -> finished, or open -> cancelled.';
    END IF;
    IF OLD.started_at IS NOT NULL AND NEW.started_at IS DISTINCT FROM OLD.started_at THEN
        RAISE EXCEPTION 'game.tables: the started_at of table % is set once', OLD.id;
    END IF;
    IF OLD.ended_at IS NOT NULL AND NEW.ended_at IS DISTINCT FROM OLD.ended_at THEN
        RAISE EXCEPTION 'game.tables: the ended_at of table % is set once', OLD.id;
    END IF;
    RETURN NEW;
END;
$$
"""


def upgrade() -> None:
    transitions = ", ".join(f"('{old}', '{new}')" for old, new in TRANSITIONS)
    op.execute(LIFECYCLE.format(transitions=transitions))
    op.execute(
        "CREATE TRIGGER tables_lifecycle BEFORE UPDATE ON game.tables "
        "FOR EACH ROW EXECUTE FUNCTION game.guard_table_lifecycle()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER tables_lifecycle ON game.tables")
    op.execute("DROP FUNCTION game.guard_table_lifecycle()")
