"""ledger: a provider payment is credited by one deposit at most

Revision ID: ledger_0002
Revises: ledger_0001
Create Date: 2026-11-30 07:20:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "ledger_0002"
down_revision: str | Sequence[str] | None = "ledger_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "uq_transfers_deposit_payment",
        "transfers",
        [sa.text("(reference ->> 'payment')")],
        unique=True,
        schema="ledger",
        postgresql_where=sa.text("kind = 'deposit' AND reference ? 'payment'"),
    )


def downgrade() -> None:
    op.drop_index("uq_transfers_deposit_payment", table_name="transfers", schema="ledger")
