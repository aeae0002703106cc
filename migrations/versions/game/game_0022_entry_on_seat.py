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

It runs on a live database (docs/operations.md, "Zero-downtime restart and deploy"): every
step is its own short transaction (``autocommit_block``) and idempotent, so a run that is
interrupted is simply run again.  The column is added nullable (the catalog alone) and the
trigger created before the backfill, so a seat inserted meanwhile has its entry; the backfill
goes by ``BATCH`` ids a transaction; NOT NULL comes from a ``NOT VALID`` CHECK validated under
SHARE UPDATE EXCLUSIVE (PostgreSQL 12+ then skips the scan under the exclusive lock) and
dropped; the index is built ``CONCURRENTLY`` (an INVALID one, from a build that failed, is
dropped first).  The statements that do block seat writes queue at most ``LOCK_TIMEOUT`` for
their lock, then give way and try again.  The schema it leaves is the one the single-
transaction version left.

``seated_at`` defaults to the database's ``now()``: the code no longer sends the worker's
clock, and the limit check reads the same ``now()`` in the seat's transaction, so a worker
whose clock is off neither dates a seat nor moves a window.

Revision ID: game_0022
Revises: game_0021
Create Date: 2026-12-02 09:00:00.000000
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from alembic import op
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

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
CREATE OR REPLACE FUNCTION game.seat_entry_of_table() RETURNS trigger
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

NOT_NULL_CHECK = "ck_seats_entry_cents_not_null"
"""A CHECK that stands in for NOT NULL while the column is checked without blocking writes."""

BATCH = 5_000
"""Seat ids a backfill batch spans: one short transaction, its rows locked for tens of ms."""

LOCK_TIMEOUT = "1s"
"""How long a statement that blocks seat writes may queue for its lock before it gives way."""

LOCK_ATTEMPTS = 60
LOCK_NOT_AVAILABLE = "55P03"


def _execute(sql: str, **params: object) -> Any:
    """One statement in its own transaction (autocommit); retried when it cannot get its lock
    within ``LOCK_TIMEOUT``, so that writes queued behind it never wait longer."""
    bind = op.get_bind()
    for attempt in range(1, LOCK_ATTEMPTS + 1):
        try:
            return bind.execute(text(sql), params)
        except DBAPIError as error:
            if getattr(error.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE or (
                attempt == LOCK_ATTEMPTS
            ):
                raise
            time.sleep(min(0.1 * attempt, 2.0))
    raise AssertionError("unreachable")


def _exists(sql: str, **params: object) -> bool:
    return bool(op.get_bind().execute(text(sql), params).scalar())


def _has_constraint(name: str) -> bool:
    return _exists(
        "SELECT 1 FROM pg_constraint WHERE conrelid = 'game.seats'::regclass AND conname = :name",
        name=name,
    )


def _add_check(name: str, condition: str) -> None:
    """Add a CHECK without a scan under the exclusive lock: NOT VALID (new rows only), then
    VALIDATE (the scan, under SHARE UPDATE EXCLUSIVE: seat writes go on)."""
    if not _has_constraint(name):
        _execute(f"ALTER TABLE game.seats ADD CONSTRAINT {name} CHECK ({condition}) NOT VALID")
    op.get_bind().execute(text("SET lock_timeout = 0"))  # waiting here blocks no seat write
    try:
        _execute(f"ALTER TABLE game.seats VALIDATE CONSTRAINT {name}")
    finally:
        op.get_bind().execute(text(f"SET lock_timeout = '{LOCK_TIMEOUT}'"))


def _backfill() -> None:
    """Each seat gets its table's entry, ``BATCH`` ids per transaction.  Seats inserted from
    now on get it from the trigger, so the ids above the current maximum need no batch."""
    highest = op.get_bind().execute(text("SELECT max(id) FROM game.seats")).scalar()
    low = op.get_bind().execute(text("SELECT min(id) - 1 FROM game.seats")).scalar()
    while highest is not None and low < highest:
        # the game_0008 guard does not fix the column yet: the backfill passes it
        _execute(
            "UPDATE game.seats s SET entry_cents = t.entry_cents FROM game.tables t "
            "WHERE t.id = s.table_id AND s.id > :low AND s.id <= :high "
            "AND s.entry_cents IS NULL",
            low=low,
            high=low + BATCH,
        )
        low += BATCH


def _build_paid_index() -> None:
    """``CREATE INDEX CONCURRENTLY``: seat writes go on while it is built.  A build that was
    interrupted leaves an INVALID index of the name: dropped and built again."""
    invalid = _exists(
        "SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(:name) AND NOT indisvalid",
        name=f"game.{PAID_INDEX}",
    )
    bind = op.get_bind()
    bind.execute(text("SET lock_timeout = 0"))  # SHARE UPDATE EXCLUSIVE: no seat write waits
    try:
        if invalid:
            _execute(f"DROP INDEX CONCURRENTLY game.{PAID_INDEX}")
        _execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {PAID_INDEX} ON game.seats "
            f"(user_id, seated_at) INCLUDE (entry_cents) WHERE {PAID}"
        )
        _execute("DROP INDEX CONCURRENTLY IF EXISTS game.ix_seats_user_id_seated_at")
    finally:
        bind.execute(text(f"SET lock_timeout = '{LOCK_TIMEOUT}'"))


def upgrade() -> None:
    # every step its own short transaction, each idempotent: an interrupted run is run again
    with op.get_context().autocommit_block():
        bind = op.get_bind()
        bind.execute(text(f"SET lock_timeout = '{LOCK_TIMEOUT}'"))
        try:
            # nullable: a change of the catalog alone, no rewrite
            _execute("ALTER TABLE game.seats ADD COLUMN IF NOT EXISTS entry_cents bigint")
            # the trigger before the backfill: a seat inserted from now on has its entry
            _execute(ENTRY_OF_TABLE)
            if not _exists(
                "SELECT 1 FROM pg_trigger WHERE tgrelid = 'game.seats'::regclass "
                "AND tgname = 'seats_entry_of_table'"
            ):
                _execute(
                    "CREATE TRIGGER seats_entry_of_table BEFORE INSERT ON game.seats "
                    "FOR EACH ROW EXECUTE FUNCTION game.seat_entry_of_table()"
                )
            _execute("ALTER TABLE game.seats ALTER COLUMN seated_at SET DEFAULT now()")
            _backfill()
            # NOT NULL from a validated CHECK: PostgreSQL (12+) then skips the scan
            _add_check(NOT_NULL_CHECK, "entry_cents IS NOT NULL")
            _execute("ALTER TABLE game.seats ALTER COLUMN entry_cents SET NOT NULL")
            _execute(f"ALTER TABLE game.seats DROP CONSTRAINT IF EXISTS {NOT_NULL_CHECK}")
            _add_check("ck_seats_entry_cents", "entry_cents >= 0")
            # after the backfill: the new guard refuses any change of the entry
            _execute(_guard((*FIXED, "entry_cents")))
            _build_paid_index()
        finally:
            bind.execute(text("RESET lock_timeout"))


def downgrade() -> None:
    op.create_index("ix_seats_user_id_seated_at", "seats", ["user_id", "seated_at"], schema="game")
    op.execute(f"DROP INDEX game.{PAID_INDEX}")
    op.execute("ALTER TABLE game.seats ALTER COLUMN seated_at DROP DEFAULT")
    op.execute("DROP TRIGGER seats_entry_of_table ON game.seats")
    op.execute("DROP FUNCTION game.seat_entry_of_table()")
    op.execute(_guard(FIXED))
    op.execute("ALTER TABLE game.seats DROP COLUMN entry_cents")
