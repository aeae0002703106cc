"""compliance: the audit sweep records which reconciliation it ran and the ledger's mark

The sweep's reconciliation is incremental between daily full runs (``ledger.reconcile``):
each sweep records its kind, the entries it checked (above ``entries_after``) and the mark the
next sweep starts after (``entries_up_to``).  Earlier sweeps all ran in full, without a mark.
Columns added to an insert-only table: its triggers and grants are unchanged.

Revision ID: compliance_0005
Revises: compliance_0004
Create Date: 2026-12-01 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "compliance_0005"
down_revision: str | Sequence[str] | None = "compliance_0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "audit_sweeps",
        sa.Column("reconcile_kind", sa.String(length=16), server_default="full", nullable=False),
        schema="game",
    )
    op.add_column(
        "audit_sweeps", sa.Column("entries_after", sa.BigInteger(), nullable=True), schema="game"
    )
    op.add_column(
        "audit_sweeps", sa.Column("entries_up_to", sa.BigInteger(), nullable=True), schema="game"
    )
    op.add_column(
        "audit_sweeps",
        sa.Column("entries_checked", sa.BigInteger(), nullable=True),
        schema="game",
    )
    op.create_check_constraint(
        op.f("ck_audit_sweeps_reconcile_kind"),
        "audit_sweeps",
        "reconcile_kind IN ('full', 'incremental') "
        "AND (reconcile_kind = 'incremental') = (entries_after IS NOT NULL)",
        schema="game",
    )


def downgrade() -> None:
    op.drop_constraint(
        op.f("ck_audit_sweeps_reconcile_kind"), "audit_sweeps", type_="check", schema="game"
    )
    op.drop_column("audit_sweeps", "entries_checked", schema="game")
    op.drop_column("audit_sweeps", "entries_up_to", schema="game")
    op.drop_column("audit_sweeps", "entries_after", schema="game")
    op.drop_column("audit_sweeps", "reconcile_kind", schema="game")
