"""game: what a row records of who paid, how much and at what fee is fixed once written

``game_0005`` granted ``raiz_service`` UPDATE on the whole of the mutable game tables.  The code
changes a few columns of each (ORM assignments and ``update()`` statements of
``app/tables/service.py``, ``app/tables/driver.py``, ``app/tables/timers.py``,
``app/tables/realtime.py``, ``app/accounts/service.py`` and ``app/timers/runner.py``):

* ``game.tables``: the live state of the match (status, start and end times, step, match state,
  round number, last events, freeze, timer, result);
* ``game.seats``: the match seat given at the start, the entry transfer (written right after the
  seat row: its id names the seat), the leaving time and the refund transfer;
* ``game.access_tokens``: the revocation time; ``game.presence``: the last seen time;
* ``game.deadlines``: the status, the attempts, the retry time and the handling time;
* ``game.users``: nothing.

UPDATE is now granted on exactly those columns, so the service cannot even try to rewrite the
rest.  The rest is refused to every role, the schemas' owner included, by a ``*_guard_update``
trigger per table (as ``ledger.accounts_guard_update``) where it is a fact the money or an
identity rests on: a table's game, preset, options, seat count, entry, currency, fee snapshot
(``fee_bps`` and ``fee_rate_id``: ``ledger.reconcile`` checks a settlement against the fee it
stored, not against the table), creator and creation time; a seat's table, owner, chair and
seating time; a user's id and creation time; a token's hash, owner and creation time; a
deadline's table, kind, staleness token and creation time; a presence row's table and user.
Some columns are written once after the insert: a seat's match seat, entry transfer, leaving time
and refund transfer, a token's revocation; once set, each is kept as it is (a refunded seat
never sits again, a revoked token never comes back).  Times that tests and operators move on
purpose (a deadline's ``due_at``, a table's ``fill_deadline_at``, a token's ``expires_at``) and
a user's name, role and password are not guarded; the service may not update them either.

Revision ID: game_0008
Revises: game_0007
Create Date: 2026-12-01 09:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "game_0008"
down_revision: str | Sequence[str] | None = "game_0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SERVICE_ROLE = "raiz_service"
"""The NOLOGIN group role ``game_0005`` grants (frozen at this revision)."""

UPDATED_COLUMNS: dict[str, tuple[str, ...]] = {
    "tables": (
        "status",
        "started_at",
        "ended_at",
        "step",
        "match_state",
        "round_number",
        "last_events",
        "frozen_at",
        "frozen_keeper_seat",
        "timer_kind",
        "timer_due_at",
        "result",
    ),
    "seats": ("engine_seat", "entry_transfer_id", "left_at", "refund_transfer_id"),
    "users": (),
    "access_tokens": ("revoked_at",),
    "presence": ("last_seen_at",),
    "deadlines": ("status", "attempts", "retry_at", "handled_at"),
}
"""Per mutable table, the columns the code updates: the serving role's UPDATE grant."""

FIXED_COLUMNS: dict[str, tuple[str, ...]] = {
    "tables": (
        "id",
        "game",
        "preset",
        "options",
        "seat_count",
        "entry_cents",
        "currency",
        "fee_bps",
        "fee_rate_id",
        "creator_id",
        "created_at",
    ),
    "seats": ("id", "table_id", "user_id", "position", "seated_at"),
    "users": ("id", "created_at"),
    "access_tokens": ("id", "token_sha256", "user_id", "created_at"),
    "presence": ("table_id", "user_id"),
    "deadlines": ("id", "table_id", "kind", "token", "created_at"),
}
"""Per table, the columns no role may change once the row is written."""

SET_ONCE_COLUMNS: dict[str, tuple[str, ...]] = {
    "seats": ("engine_seat", "entry_transfer_id", "left_at", "refund_transfer_id"),
    "access_tokens": ("revoked_at",),
}
"""Per table, the columns written once after the insert (from NULL), then kept."""

ROW_NAMES: dict[str, tuple[str, str]] = {
    "tables": ("table", "OLD.id"),
    "seats": ("seat", "OLD.id"),
    "users": ("user", "OLD.id"),
    "access_tokens": ("token", "OLD.id"),
    "presence": ("presence", "OLD.user_id || ' at ' || OLD.table_id"),
    "deadlines": ("deadline", "OLD.id"),
}
"""How a refusal names the row: a noun and the expression of its key."""


def _guard_function(table: str) -> str:
    noun, key = ROW_NAMES[table]
    checks = [
        f"    IF NEW.{column} IS DISTINCT FROM OLD.{column} THEN\n"
        f"        RAISE EXCEPTION 'game.{table}: the {column} of {noun} % cannot change', {key};\n"
        "    END IF;"
        for column in FIXED_COLUMNS[table]
    ]
    checks += [
        f"    IF OLD.{column} IS NOT NULL AND NEW.{column} IS DISTINCT FROM OLD.{column} THEN\n"
        f"        RAISE EXCEPTION 'game.{table}: the {column} of {noun} % is set once', {key};\n"
        "    END IF;"
        for column in SET_ONCE_COLUMNS.get(table, ())
    ]
    body = "\n".join(checks)
    return (
        f"CREATE FUNCTION game.guard_{table}_update() RETURNS trigger\n"
        f"LANGUAGE plpgsql AS $$\nBEGIN\n{body}\n    RETURN NEW;\nEND;\n$$"
    )


def upgrade() -> None:
    for table in FIXED_COLUMNS:
        op.execute(_guard_function(table))
        op.execute(
            f"CREATE TRIGGER {table}_guard_update BEFORE UPDATE ON game.{table} "
            f"FOR EACH ROW EXECUTE FUNCTION game.guard_{table}_update()"
        )
    for table, columns in UPDATED_COLUMNS.items():
        # revoking the table's UPDATE revokes any column's UPDATE too: exactly these after it
        op.execute(f"REVOKE UPDATE ON game.{table} FROM {SERVICE_ROLE}")
        if columns:
            op.execute(f"GRANT UPDATE ({', '.join(columns)}) ON game.{table} TO {SERVICE_ROLE}")


def downgrade() -> None:
    for table in UPDATED_COLUMNS:
        op.execute(f"REVOKE UPDATE ON game.{table} FROM {SERVICE_ROLE}")
        op.execute(f"GRANT UPDATE ON game.{table} TO {SERVICE_ROLE}")
    for table in FIXED_COLUMNS:
        op.execute(f"DROP TRIGGER IF EXISTS {table}_guard_update ON game.{table}")
        op.execute(f"DROP FUNCTION IF EXISTS game.guard_{table}_update()")
