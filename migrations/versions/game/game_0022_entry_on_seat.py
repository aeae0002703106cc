"""game: a seat records the entry it paid; its seating time is the database's clock

``game.seats.entry_cents`` is the entry the seat paid (its table's, 0 at a free table), so the
entry-limit check sums a player's entries of the last 30 days from their seats alone, with no
join of ``game.tables`` (``app.accounts.limits.used_cents``).  Backfilled from each seat's
table, then NOT NULL.  It is fixed like the rest of the seat's identity: the ``game_0008``
guard refuses every role a change of it after the insert (the serving role has no UPDATE on it
either), and a ``BEFORE INSERT`` trigger refuses a seat whose entry is not its table's, or
fills it in when the insert leaves it out (a release older than this one, still running during
a rolling deploy, inserts seats without it: "Zero-downtime restart and deploy").

``ix_seats_user_id_seated_at`` (``game_0020``) is replaced by ``ix_seats_paid_by_user``: the
player's paid, unrefunded seats by seating time with their entry, a partial index the
used-amount query reads alone (an index-only scan, ``ops/bench/bench_limits.py``).

``seated_at`` defaults to the database's ``now()``: the code no longer sends the worker's
clock, and the limit check reads the same ``now()`` in the seat's transaction, so a worker
whose clock is off neither dates a seat nor moves a window.

Revision ID: game_0022
Revises: game_0021
Create Date: 2026-12-02 09:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "game_0022"
down_revision: str | Sequence[str] | None = "game_0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FIXED = ("id", "table_id", "user_id", "position", "seated_at")
"""A seat's columns no role may change (``game_0008``, frozen here)."""
SET_ONCE = ("engine_seat", "entry_transfer_id", "left_at", "refund_transfer_id")
"""A seat's columns written once after the insert (``game_0008``)."""


def _guard(fixed: Sequence[str]) -> str:
    """``game.guard_seats_update`` as ``game_0008`` writes it, for ``fixed`` columns."""
    checks = [
        f"    IF NEW.{column} IS DISTINCT FROM OLD.{column} THEN\n"
        f"        RAISE EXCEPTION 'game.seats: the {column} of seat % cannot change', OLD.id;\n"
        "    END IF;"
        for column in fixed
    ] + [
        f"    IF OLD.{column} IS NOT NULL AND NEW.{column} IS DISTINCT FROM OLD.{column} THEN\n"
        f"        RAISE EXCEPTION 'game.seats: the {column} of seat % is set once', OLD.id;\n"
        "    END IF;"
        for column in SET_ONCE
    ]
    body = "\n".join(checks)
    return (
        "CREATE OR REPLACE FUNCTION game.guard_seats_update() RETURNS trigger\n"
        f"LANGUAGE plpgsql AS $$\nBEGIN\n{body}\n    RETURN NEW;\nEND;\n$$"
    )


ENTRY_OF_TABLE = """
CREATE FUNCTION game.seat_entry_of_table() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    entry bigint;
BEGIN
    SELECT entry_cents INTO entry FROM game.tables WHERE id = NEW.table_id;
    IF NEW.entry_cents IS NULL THEN
        NEW.entry_cents := entry;
    ELSIF NEW.entry_cents IS DISTINCT FROM entry THEN
        RAISE EXCEPTION 'game.seats: a seat at table % pays its entry (% cents), not % cents',
            NEW.table_id, entry, NEW.entry_cents;
    END IF;
    RETURN NEW;
END;
$$
"""

PAID_INDEX = "ix_seats_paid_by_user"
PAID = "entry_transfer_id IS NOT NULL AND refund_transfer_id IS NULL"
"""The seats whose entry counts against the player's limits (``app.accounts.limits``)."""


def upgrade() -> None:
    op.execute("ALTER TABLE game.seats ADD COLUMN entry_cents bigint")
    # the game_0008 guard does not know the column yet: the backfill passes it
    op.execute(
        "UPDATE game.seats s SET entry_cents = t.entry_cents FROM game.tables t "
        "WHERE t.id = s.table_id"
    )
    op.execute("ALTER TABLE game.seats ALTER COLUMN entry_cents SET NOT NULL")
    op.execute(
        "ALTER TABLE game.seats ADD CONSTRAINT ck_seats_entry_cents CHECK (entry_cents >= 0)"
    )
    op.execute(_guard((*FIXED, "entry_cents")))
    op.execute(ENTRY_OF_TABLE)
    op.execute(
        "CREATE TRIGGER seats_entry_of_table BEFORE INSERT ON game.seats "
        "FOR EACH ROW EXECUTE FUNCTION game.seat_entry_of_table()"
    )
    op.execute("ALTER TABLE game.seats ALTER COLUMN seated_at SET DEFAULT now()")
    op.execute(
        f"CREATE INDEX {PAID_INDEX} ON game.seats (user_id, seated_at) INCLUDE (entry_cents) "
        f"WHERE {PAID}"
    )
    op.drop_index("ix_seats_user_id_seated_at", table_name="seats", schema="game")


def downgrade() -> None:
    op.create_index("ix_seats_user_id_seated_at", "seats", ["user_id", "seated_at"], schema="game")
    op.execute(f"DROP INDEX game.{PAID_INDEX}")
    op.execute("ALTER TABLE game.seats ALTER COLUMN seated_at DROP DEFAULT")
    op.execute("DROP TRIGGER seats_entry_of_table ON game.seats")
    op.execute("DROP FUNCTION game.seat_entry_of_table()")
    op.execute(_guard(FIXED))
    op.execute("ALTER TABLE game.seats DROP COLUMN entry_cents")
