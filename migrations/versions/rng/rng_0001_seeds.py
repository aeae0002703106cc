"""rng: rounds with sealed seeds and commitments, client seeds, drawn streams, reveals, fixed streams

Every table is append-only: triggers refuse UPDATE, DELETE and TRUNCATE.

Revision ID: rng_0001
Revises:
Create Date: 2026-12-01 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "rng_0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = ("rng",)
depends_on: str | Sequence[str] | None = None

APPEND_ONLY_TABLES = ("rounds", "client_seeds", "drawn_streams", "reveals", "fixed_streams")


def upgrade() -> None:
    op.execute("CREATE SCHEMA IF NOT EXISTS rng")
    op.create_table(
        "rounds",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("table_ref", sa.Uuid(), nullable=False),
        sa.Column("round_number", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(length=32), nullable=False),
        sa.Column("commitment", sa.String(length=64), nullable=False),
        sa.Column("seal_key_id", sa.String(length=32), nullable=False),
        sa.Column("seal_nonce", sa.LargeBinary(), nullable=False),
        sa.Column("sealed_seed", sa.LargeBinary(), nullable=False),
        sa.Column("committed_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("round_number >= 0", name=op.f("ck_rounds_round_number")),
        sa.CheckConstraint("commitment ~ '^[0-9a-f]{64}$'", name=op.f("ck_rounds_commitment")),
        sa.CheckConstraint("octet_length(seal_nonce) = 12", name=op.f("ck_rounds_seal_nonce")),
        sa.CheckConstraint(
            "octet_length(sealed_seed) BETWEEN 32 AND 80", name=op.f("ck_rounds_sealed_seed")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rounds")),
        sa.UniqueConstraint("commitment", name=op.f("uq_rounds_commitment")),
        sa.UniqueConstraint(
            "table_ref", "round_number", name=op.f("uq_rounds_table_ref_round_number")
        ),
        schema="rng",
    )
    op.create_table(
        "client_seeds",
        sa.Column("round_id", sa.Uuid(), nullable=False),
        sa.Column("contributor", sa.String(length=64), nullable=False),
        sa.Column("position", sa.SmallInteger(), nullable=False),
        sa.Column("client_seed", sa.LargeBinary(), nullable=False),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "octet_length(client_seed) BETWEEN 1 AND 255", name=op.f("ck_client_seeds_client_seed")
        ),
        sa.CheckConstraint("position >= 0", name=op.f("ck_client_seeds_position")),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rng.rounds.id"], name=op.f("fk_client_seeds_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("round_id", "contributor", name=op.f("pk_client_seeds")),
        schema="rng",
    )
    op.create_table(
        "drawn_streams",
        sa.Column("round_id", sa.Uuid(), nullable=False),
        sa.Column("label", sa.String(length=64), nullable=False),
        sa.Column("fixed", sa.Boolean(), nullable=False),
        sa.Column("drawn_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rng.rounds.id"], name=op.f("fk_drawn_streams_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("round_id", "label", name=op.f("pk_drawn_streams")),
        schema="rng",
    )
    op.create_table(
        "reveals",
        sa.Column("round_id", sa.Uuid(), nullable=False),
        sa.Column("seed", sa.LargeBinary(), nullable=False),
        sa.Column("revealed_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("octet_length(seed) BETWEEN 16 AND 64", name=op.f("ck_reveals_seed")),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rng.rounds.id"], name=op.f("fk_reveals_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("round_id", name=op.f("pk_reveals")),
        schema="rng",
    )
    op.create_table(
        "fixed_streams",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("table_ref", sa.Uuid(), nullable=False),
        sa.Column("round_number", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(length=64), nullable=False),
        sa.Column("permutation", postgresql.ARRAY(sa.Integer()), nullable=True),
        sa.Column("draw", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "(permutation IS NULL) <> (draw IS NULL)", name=op.f("ck_fixed_streams_one_result")
        ),
        sa.CheckConstraint("draw IS NULL OR draw >= 0", name=op.f("ck_fixed_streams_draw")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fixed_streams")),
        sa.UniqueConstraint(
            "table_ref",
            "round_number",
            "label",
            name=op.f("uq_fixed_streams_table_ref_round_number_label"),
        ),
        schema="rng",
    )
    op.execute(
        """
        CREATE FUNCTION rng.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'rng.% is append-only: % refused', TG_TABLE_NAME, TG_OP
                USING ERRCODE = 'restrict_violation';
        END;
        $$
        """
    )
    for table in APPEND_ONLY_TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON rng.{table} "
            "FOR EACH ROW EXECUTE FUNCTION rng.refuse_change()"
        )
        op.execute(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON rng.{table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION rng.refuse_change()"
        )


def downgrade() -> None:
    for table in reversed(APPEND_ONLY_TABLES):
        op.drop_table(table, schema="rng")
    op.execute("DROP FUNCTION IF EXISTS rng.refuse_change()")
    op.execute("DROP SCHEMA IF EXISTS rng")
