"""compliance: the audit sweep's runs (insert-only, like every compliance table)

Revision ID: compliance_0002
Revises: compliance_0001
Create Date: 2026-11-29 19:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "compliance_0002"
down_revision: str | Sequence[str] | None = "compliance_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "audit_sweeps",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("worker", sa.String(length=64), nullable=False),
        sa.Column("signed_after", sa.DateTime(timezone=True), nullable=True),
        sa.Column("signed_up_to", sa.DateTime(timezone=True), nullable=False),
        sa.Column("rounds_verified", sa.Integer(), nullable=False),
        sa.Column("tables_failed", sa.Integer(), nullable=False),
        sa.Column("reconcile_problems", sa.Integer(), nullable=False),
        sa.Column("findings", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_sweeps")),
        schema="game",
    )
    op.execute(
        "CREATE TRIGGER audit_sweeps_append_only BEFORE UPDATE OR DELETE ON game.audit_sweeps "
        "FOR EACH ROW EXECUTE FUNCTION game.refuse_compliance_change()"
    )
    op.execute(
        "CREATE TRIGGER audit_sweeps_no_truncate BEFORE TRUNCATE ON game.audit_sweeps "
        "FOR EACH STATEMENT EXECUTE FUNCTION game.refuse_compliance_change()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS audit_sweeps_no_truncate ON game.audit_sweeps")
    op.execute("DROP TRIGGER IF EXISTS audit_sweeps_append_only ON game.audit_sweeps")
    op.drop_table("audit_sweeps", schema="game")
