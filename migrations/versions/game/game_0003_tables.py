"""tables: fee rates, tables, seats, rounds, round log, actions, presence

Revision ID: game_0003
Revises: game_0002
Create Date: 2026-11-29 16:21:07.935155
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "game_0003"
down_revision: str | Sequence[str] | None = "game_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APPEND_ONLY_TABLES = ("rounds", "round_log", "round_results")
"""A committed round is never changed in place."""
INITIAL_FEE_BPS = 1_000
"""10 %: the rate in force until an operator sets one."""

REFUSE_CHANGE = """
CREATE FUNCTION game.refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'game.% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING HINT = 'Rounds and their logs are never changed in place.';
END;
$$
"""


def upgrade() -> None:
    op.create_table(
        "fee_rates",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("fee_bps", sa.Integer(), nullable=False),
        sa.Column("set_by", sa.Uuid(), nullable=True),
        sa.Column("reason", sa.String(length=200), nullable=False),
        sa.Column("set_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("fee_bps BETWEEN 0 AND 5000", name=op.f("ck_fee_rates_fee_bps")),
        sa.ForeignKeyConstraint(
            ["set_by"], ["game.users.id"], name=op.f("fk_fee_rates_set_by_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fee_rates")),
        schema="game",
    )
    op.create_table(
        "tables",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("game", sa.String(length=16), nullable=False),
        sa.Column("preset", sa.String(length=32), nullable=False),
        sa.Column("options", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("seat_count", sa.Integer(), nullable=False),
        sa.Column("entry_cents", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("fee_bps", sa.Integer(), nullable=False),
        sa.Column("fee_rate_id", sa.BigInteger(), nullable=False),
        sa.Column("creator_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("fill_deadline_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("abandon_after_s", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("match_state", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("round_number", sa.Integer(), nullable=False),
        sa.Column("last_events", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("frozen_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("frozen_keeper_seat", sa.Integer(), nullable=True),
        sa.Column("timer_kind", sa.String(length=32), nullable=True),
        sa.Column("timer_due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("result", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.CheckConstraint(
            "status IN ('open', 'running', 'finished', 'cancelled')", name=op.f("ck_tables_status")
        ),
        sa.CheckConstraint("entry_cents >= 0", name=op.f("ck_tables_entry_cents")),
        sa.CheckConstraint("seat_count BETWEEN 2 AND 10", name=op.f("ck_tables_seat_count")),
        sa.ForeignKeyConstraint(
            ["creator_id"], ["game.users.id"], name=op.f("fk_tables_creator_id_users")
        ),
        sa.ForeignKeyConstraint(
            ["fee_rate_id"], ["game.fee_rates.id"], name=op.f("fk_tables_fee_rate_id_fee_rates")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tables")),
        schema="game",
    )
    op.create_index(
        "ix_tables_status_created", "tables", ["status", "created_at"], unique=False, schema="game"
    )
    op.create_table(
        "presence",
        sa.Column("table_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["table_id"], ["game.tables.id"], name=op.f("fk_presence_table_id_tables")
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["game.users.id"], name=op.f("fk_presence_user_id_users")
        ),
        sa.PrimaryKeyConstraint("table_id", "user_id", name=op.f("pk_presence")),
        schema="game",
    )
    op.create_table(
        "rounds",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("table_id", sa.Uuid(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("rng_round_id", sa.Uuid(), nullable=False),
        sa.Column("commitment", sa.String(length=64), nullable=False),
        sa.Column("rng_version", sa.String(length=32), nullable=False),
        sa.Column("start_state", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("start_state_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["table_id"], ["game.tables.id"], name=op.f("fk_rounds_table_id_tables")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rounds")),
        sa.UniqueConstraint("rng_round_id", name=op.f("uq_rounds_rng_round_id")),
        sa.UniqueConstraint("table_id", "number", name=op.f("uq_rounds_table_id_number")),
        schema="game",
    )
    op.create_table(
        "seats",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("table_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("engine_seat", sa.Integer(), nullable=True),
        sa.Column("entry_transfer_id", sa.String(length=128), nullable=True),
        sa.Column("refund_transfer_id", sa.String(length=128), nullable=True),
        sa.Column("seated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("left_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["table_id"], ["game.tables.id"], name=op.f("fk_seats_table_id_tables")
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["game.users.id"], name=op.f("fk_seats_user_id_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seats")),
        schema="game",
    )
    op.create_index(op.f("ix_seats_table_id"), "seats", ["table_id"], unique=False, schema="game")
    op.create_index(op.f("ix_seats_user_id"), "seats", ["user_id"], unique=False, schema="game")
    op.create_index(
        "uq_seats_table_position_active",
        "seats",
        ["table_id", "position"],
        unique=True,
        schema="game",
        postgresql_where=sa.text("left_at IS NULL"),
    )
    op.create_index(
        "uq_seats_table_user_active",
        "seats",
        ["table_id", "user_id"],
        unique=True,
        schema="game",
        postgresql_where=sa.text("left_at IS NULL"),
    )
    op.create_table(
        "table_actions",
        sa.Column("table_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("action_id", sa.String(length=64), nullable=False),
        sa.Column("request_sha256", sa.LargeBinary(length=32), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["table_id"], ["game.tables.id"], name=op.f("fk_table_actions_table_id_tables")
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["game.users.id"], name=op.f("fk_table_actions_user_id_users")
        ),
        sa.PrimaryKeyConstraint("table_id", "user_id", "action_id", name=op.f("pk_table_actions")),
        schema="game",
    )
    op.create_table(
        "round_log",
        sa.Column("round_id", sa.Uuid(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("body", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("hash", sa.LargeBinary(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "kind IN ('input', 'chance', 'event', 'note')", name=op.f("ck_round_log_kind")
        ),
        sa.ForeignKeyConstraint(
            ["round_id"], ["game.rounds.id"], name=op.f("fk_round_log_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("round_id", "seq", name=op.f("pk_round_log")),
        schema="game",
    )
    op.create_table(
        "round_results",
        sa.Column("round_id", sa.Uuid(), nullable=False),
        sa.Column("final_state_hash", sa.String(length=64), nullable=False),
        sa.Column("last_hash", sa.LargeBinary(length=32), nullable=False),
        sa.Column("entries", sa.Integer(), nullable=False),
        sa.Column("summary", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["round_id"], ["game.rounds.id"], name=op.f("fk_round_results_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("round_id", name=op.f("pk_round_results")),
        schema="game",
    )

    op.execute(REFUSE_CHANGE)
    for table in APPEND_ONLY_TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON game.{table} "
            "FOR EACH ROW EXECUTE FUNCTION game.refuse_change()"
        )
        op.execute(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON game.{table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION game.refuse_change()"
        )
    op.execute(
        sa.text(
            "INSERT INTO game.fee_rates (fee_bps, reason, set_at) "
            "VALUES (:fee_bps, 'initial rate', now())"
        ).bindparams(fee_bps=INITIAL_FEE_BPS)
    )


def downgrade() -> None:
    for table in APPEND_ONLY_TABLES:
        op.execute(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON game.{table}")
        op.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON game.{table}")
    op.execute("DROP FUNCTION IF EXISTS game.refuse_change()")
    op.drop_table("round_results", schema="game")
    op.drop_table("round_log", schema="game")
    op.drop_table("table_actions", schema="game")
    op.drop_index(
        "uq_seats_table_user_active",
        table_name="seats",
        schema="game",
        postgresql_where=sa.text("left_at IS NULL"),
    )
    op.drop_index(
        "uq_seats_table_position_active",
        table_name="seats",
        schema="game",
        postgresql_where=sa.text("left_at IS NULL"),
    )
    op.drop_index(op.f("ix_seats_user_id"), table_name="seats", schema="game")
    op.drop_index(op.f("ix_seats_table_id"), table_name="seats", schema="game")
    op.drop_table("seats", schema="game")
    op.drop_table("rounds", schema="game")
    op.drop_table("presence", schema="game")
    op.drop_index("ix_tables_status_created", table_name="tables", schema="game")
    op.drop_table("tables", schema="game")
    op.drop_table("fee_rates", schema="game")
