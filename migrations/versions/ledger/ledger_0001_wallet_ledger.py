"""wallet ledger: accounts, transfers, entries, settlements; append-only triggers

Revision ID: ledger_0001
Revises:
Create Date: 2026-11-29 15:34:06.528948
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "ledger_0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = ("ledger",)
depends_on: str | Sequence[str] | None = None

# Frozen copies of ledger.constants at this revision (a migration never imports live code).
ACCOUNT_NAMESPACE = uuid.UUID("6f1d3c52-8b0e-4c1a-9f7e-2d4b5a6c7e80")
SYSTEM_ACCOUNTS = (
    ("house_revenue", False),
    ("prize_fund", True),
    ("cash_in", True),
    ("cash_out", True),
)
CURRENCIES = ("BRL",)
APPEND_ONLY_TABLES = ("transfers", "entries", "settlements")

REFUSE_CHANGE = """
CREATE FUNCTION ledger.refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger.% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING HINT = 'A correction is a new reversing transfer.';
END;
$$
"""

GUARD_ACCOUNT_UPDATE = """
CREATE FUNCTION ledger.guard_account_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS DISTINCT FROM OLD.id
        OR NEW.type IS DISTINCT FROM OLD.type
        OR NEW.currency IS DISTINCT FROM OLD.currency
        OR NEW.owner_id IS DISTINCT FROM OLD.owner_id
        OR NEW.may_go_negative IS DISTINCT FROM OLD.may_go_negative
        OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
        RAISE EXCEPTION 'ledger.accounts: the identity of account % cannot change', OLD.id;
    END IF;
    IF NEW.version < OLD.version THEN
        RAISE EXCEPTION 'ledger.accounts: the version of account % cannot go back', OLD.id;
    END IF;
    IF NEW.balance_cents <> OLD.balance_cents AND NEW.version = OLD.version THEN
        RAISE EXCEPTION 'ledger.accounts: the balance of account % changes only with an entry',
            OLD.id;
    END IF;
    IF OLD.closed_at IS NOT NULL AND (
        NEW.closed_at IS DISTINCT FROM OLD.closed_at
        OR NEW.closed_version IS DISTINCT FROM OLD.closed_version
        OR NEW.version <> OLD.version) THEN
        RAISE EXCEPTION 'ledger.accounts: account % is closed', OLD.id;
    END IF;
    RETURN NEW;
END;
$$
"""


def _account_id(account_type: str, currency: str) -> uuid.UUID:
    return uuid.uuid5(ACCOUNT_NAMESPACE, f"{account_type}:{currency}:-")


def upgrade() -> None:
    op.execute("CREATE SCHEMA IF NOT EXISTS ledger")
    accounts = op.create_table(
        "accounts",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("owner_id", sa.Uuid(), nullable=True),
        sa.Column("may_go_negative", sa.Boolean(), nullable=False),
        sa.Column("balance_cents", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("version", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("closed_version", sa.BigInteger(), nullable=True),
        sa.CheckConstraint(
            "(type IN ('player_wallet', 'table_escrow')) = (owner_id IS NOT NULL)",
            name=op.f("ck_accounts_owner"),
        ),
        sa.CheckConstraint("currency ~ '^[A-Z]{3}$'", name=op.f("ck_accounts_currency")),
        sa.CheckConstraint(
            "type IN ('player_wallet', 'table_escrow', 'house_revenue', 'prize_fund', 'cash_in', 'cash_out')",
            name=op.f("ck_accounts_type"),
        ),
        sa.CheckConstraint(
            "type NOT IN ('player_wallet', 'table_escrow', 'house_revenue') OR NOT may_go_negative",
            name=op.f("ck_accounts_never_negative_types"),
        ),
        sa.CheckConstraint(
            "(closed_at IS NULL) = (closed_version IS NULL)", name=op.f("ck_accounts_closed")
        ),
        sa.CheckConstraint(
            "may_go_negative OR balance_cents >= 0", name=op.f("ck_accounts_balance_not_negative")
        ),
        sa.CheckConstraint("version >= 0", name=op.f("ck_accounts_version")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_accounts")),
        sa.UniqueConstraint(
            "type", "currency", "owner_id", name=op.f("uq_accounts_type_currency_owner_id")
        ),
        schema="ledger",
    )
    op.create_index(
        op.f("ix_accounts_owner_id"), "accounts", ["owner_id"], unique=False, schema="ledger"
    )
    op.create_table(
        "settlements",
        sa.Column("id", sa.String(length=100), nullable=False),
        sa.Column("table_id", sa.Uuid(), nullable=False),
        sa.Column("escrow_account_id", sa.Uuid(), nullable=False),
        sa.Column("fee_bps", sa.Integer(), nullable=False),
        sa.Column("pool_cents", sa.BigInteger(), nullable=False),
        sa.Column("fee_cents", sa.BigInteger(), nullable=False),
        sa.Column("winners", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("payouts", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("reference", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("request_sha256", sa.LargeBinary(length=32), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "jsonb_typeof(payouts) = 'array'", name=op.f("ck_settlements_payouts_array")
        ),
        sa.CheckConstraint(
            "jsonb_typeof(winners) = 'array'", name=op.f("ck_settlements_winners_array")
        ),
        sa.CheckConstraint(
            "char_length(id) BETWEEN 1 AND 100", name=op.f("ck_settlements_id_length")
        ),
        sa.CheckConstraint("fee_bps BETWEEN 0 AND 10000", name=op.f("ck_settlements_fee_bps")),
        sa.CheckConstraint(
            "pool_cents >= 0 AND fee_cents >= 0 AND fee_cents <= pool_cents",
            name=op.f("ck_settlements_pool"),
        ),
        sa.ForeignKeyConstraint(
            ["escrow_account_id"],
            ["ledger.accounts.id"],
            name=op.f("fk_settlements_escrow_account_id_accounts"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_settlements")),
        schema="ledger",
    )
    op.create_index(
        op.f("ix_settlements_table_id"), "settlements", ["table_id"], unique=False, schema="ledger"
    )
    op.create_table(
        "transfers",
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("batch_id", sa.Uuid(), nullable=False),
        sa.Column("batch_position", sa.Integer(), nullable=False),
        sa.Column("debit_account_id", sa.Uuid(), nullable=False),
        sa.Column("credit_account_id", sa.Uuid(), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("reverses_id", sa.String(length=128), nullable=True),
        sa.Column("reference", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("metadata", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("request_sha256", sa.LargeBinary(length=32), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "(reverses_id IS NOT NULL) = (kind IN ('reversal', 'entry_refund'))",
            name=op.f("ck_transfers_reverses"),
        ),
        sa.CheckConstraint(
            "jsonb_typeof(metadata) = 'object'", name=op.f("ck_transfers_metadata_object")
        ),
        sa.CheckConstraint(
            "jsonb_typeof(reference) = 'object'", name=op.f("ck_transfers_reference_object")
        ),
        sa.CheckConstraint(
            "kind IN ('deposit', 'withdrawal', 'entry_fee', 'entry_refund', 'house_fee', 'payout', 'prize_funding', 'reversal', 'adjustment')",
            name=op.f("ck_transfers_kind"),
        ),
        sa.CheckConstraint(
            "amount_cents > 0 AND amount_cents <= 1000000000000", name=op.f("ck_transfers_amount")
        ),
        sa.CheckConstraint(
            "char_length(id) BETWEEN 1 AND 128", name=op.f("ck_transfers_id_length")
        ),
        sa.CheckConstraint(
            "debit_account_id <> credit_account_id", name=op.f("ck_transfers_accounts_differ")
        ),
        sa.ForeignKeyConstraint(
            ["credit_account_id"],
            ["ledger.accounts.id"],
            name=op.f("fk_transfers_credit_account_id_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["debit_account_id"],
            ["ledger.accounts.id"],
            name=op.f("fk_transfers_debit_account_id_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["reverses_id"],
            ["ledger.transfers.id"],
            name=op.f("fk_transfers_reverses_id_transfers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_transfers")),
        sa.UniqueConstraint("reverses_id", name=op.f("uq_transfers_reverses_id")),
        schema="ledger",
    )
    op.create_table(
        "entries",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("transfer_id", sa.String(length=128), nullable=False),
        sa.Column("account_id", sa.Uuid(), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("balance_before_cents", sa.BigInteger(), nullable=False),
        sa.Column("balance_after_cents", sa.BigInteger(), nullable=False),
        sa.Column("account_version", sa.BigInteger(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("account_version >= 1", name=op.f("ck_entries_account_version")),
        sa.CheckConstraint("amount_cents <> 0", name=op.f("ck_entries_amount_not_zero")),
        sa.CheckConstraint(
            "balance_after_cents = balance_before_cents + amount_cents",
            name=op.f("ck_entries_balance_arithmetic"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id"], ["ledger.accounts.id"], name=op.f("fk_entries_account_id_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["transfer_id"],
            ["ledger.transfers.id"],
            name=op.f("fk_entries_transfer_id_transfers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_entries")),
        sa.UniqueConstraint(
            "account_id", "account_version", name=op.f("uq_entries_account_id_account_version")
        ),
        sa.UniqueConstraint(
            "transfer_id", "account_id", name=op.f("uq_entries_transfer_id_account_id")
        ),
        schema="ledger",
    )

    op.execute(REFUSE_CHANGE)
    op.execute(GUARD_ACCOUNT_UPDATE)
    for table in APPEND_ONLY_TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON ledger.{table} "
            "FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change()"
        )
        op.execute(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON ledger.{table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_change()"
        )
    op.execute(
        "CREATE TRIGGER accounts_no_delete BEFORE DELETE ON ledger.accounts "
        "FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change()"
    )
    op.execute(
        "CREATE TRIGGER accounts_no_truncate BEFORE TRUNCATE ON ledger.accounts "
        "FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_change()"
    )
    op.execute(
        "CREATE TRIGGER accounts_guard_update BEFORE UPDATE ON ledger.accounts "
        "FOR EACH ROW EXECUTE FUNCTION ledger.guard_account_update()"
    )

    op.bulk_insert(
        accounts,
        [
            {
                "id": _account_id(account_type, currency),
                "type": account_type,
                "currency": currency,
                "owner_id": None,
                "may_go_negative": may_go_negative,
            }
            for currency in CURRENCIES
            for account_type, may_go_negative in SYSTEM_ACCOUNTS
        ],
    )


def downgrade() -> None:
    op.drop_table("entries", schema="ledger")
    op.drop_table("transfers", schema="ledger")
    op.drop_index(op.f("ix_settlements_table_id"), table_name="settlements", schema="ledger")
    op.drop_table("settlements", schema="ledger")
    op.drop_index(op.f("ix_accounts_owner_id"), table_name="accounts", schema="ledger")
    op.drop_table("accounts", schema="ledger")
    op.execute("DROP FUNCTION ledger.guard_account_update()")
    op.execute("DROP FUNCTION ledger.refuse_change()")
    op.execute("DROP SCHEMA IF EXISTS ledger")
