"""ledger: the serving role updates only an account's balance, version and closing columns

``ledger_0003`` granted ``raiz_service`` UPDATE on the whole of ``ledger.accounts``.  The code
changes four columns: a posting moves ``balance_cents`` and ``version`` (ledger/_posting.py),
closing an escrow sets ``closed_at`` and ``closed_version`` (``Ledger.close_escrow``).  UPDATE
is now granted on those columns only, so the service cannot even try to rewrite an account's
id, type, currency, owner, negative policy or creation time (the ``accounts_guard_update``
trigger still refuses that to every role).  ``SELECT … FOR UPDATE``, which locks accounts
before a posting, needs UPDATE on one column at least: it has four.

Revision ID: ledger_0004
Revises: ledger_0003
Create Date: 2026-11-30 12:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "ledger_0004"
down_revision: str | Sequence[str] | None = "ledger_0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SERVICE_ROLE = "raiz_service"
"""The NOLOGIN group role ``ledger_0003`` grants (frozen at this revision)."""
UPDATED_COLUMNS = ("balance_cents", "version", "closed_at", "closed_version")


def upgrade() -> None:
    # revoking the table's UPDATE revokes any column's UPDATE too: exactly these after it
    op.execute(f"REVOKE UPDATE ON ledger.accounts FROM {SERVICE_ROLE}")
    op.execute(f"GRANT UPDATE ({', '.join(UPDATED_COLUMNS)}) ON ledger.accounts TO {SERVICE_ROLE}")


def downgrade() -> None:
    op.execute(f"REVOKE UPDATE ON ledger.accounts FROM {SERVICE_ROLE}")
    op.execute(f"GRANT UPDATE ON ledger.accounts TO {SERVICE_ROLE}")
