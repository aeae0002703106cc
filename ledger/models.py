"""Tables of the ledger: accounts, transfers, entries and settlements.

Transfers, entries and settlements are append-only (database triggers refuse UPDATE,
DELETE and TRUNCATE); accounts change only through the ledger service, which writes one
entry per balance change and bumps the account's version by one each time.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    UniqueConstraint,
    Uuid,
    any_,
    bindparam,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import Mapped, mapped_column

from ledger.base import LedgerBase

__all__ = (
    "ACCOUNTS",
    "ENTRIES",
    "PAYMENT_INDEX_PREDICATE",
    "SETTLEMENTS",
    "TRANSFERS",
    "AccountRow",
    "EntryRow",
    "SettlementRow",
    "TransferRow",
    "id_in",
)

_ACCOUNT_TYPES_SQL = (
    "'player_wallet', 'table_escrow', 'house_revenue', 'prize_fund', 'cash_in', 'cash_out'"
)
_KINDS_SQL = (
    "'deposit', 'withdrawal', 'entry_fee', 'entry_refund', 'house_fee', 'payout', "
    "'prize_funding', 'reversal', 'adjustment'"
)
_NOW = text("now()")


class AccountRow(LedgerBase):
    """An account: a type, a currency, a balance in centavos and a version."""

    __tablename__ = "accounts"
    __table_args__ = (
        CheckConstraint(f"type IN ({_ACCOUNT_TYPES_SQL})", name="type"),
        CheckConstraint("currency ~ '^[A-Z]{3}$'", name="currency"),
        CheckConstraint(
            "(type IN ('player_wallet', 'table_escrow')) = (owner_id IS NOT NULL)", name="owner"
        ),
        CheckConstraint(
            "type NOT IN ('player_wallet', 'table_escrow', 'house_revenue') OR NOT may_go_negative",
            name="never_negative_types",
        ),
        CheckConstraint("may_go_negative OR balance_cents >= 0", name="balance_not_negative"),
        CheckConstraint("version >= 0", name="version"),
        CheckConstraint("(closed_at IS NULL) = (closed_version IS NULL)", name="closed"),
        UniqueConstraint("type", "currency", "owner_id"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    """Deterministic: UUIDv5 of (type, currency, owner) — see ``account_id_for``."""
    type: Mapped[str] = mapped_column(String(32))
    currency: Mapped[str] = mapped_column(String(3))
    owner_id: Mapped[uuid.UUID | None] = mapped_column(index=True)
    """The user of a wallet or the table of an escrow; None for system accounts."""
    may_go_negative: Mapped[bool] = mapped_column(Boolean)
    balance_cents: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    """Credits minus debits, in centavos."""
    version: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    """Number of entries written on this account (the last entry's ``account_version``)."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    closed_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    """When a table escrow was closed; a closed account takes no more entries."""
    closed_version: Mapped[int | None] = mapped_column(BigInteger)
    """The account's version when it was closed."""


PAYMENT_INDEX_PREDICATE = "kind = 'deposit' AND reference ? 'payment'"
"""The deposits that credit a provider's payment (one each: ``uq_transfers_deposit_payment``)."""


class TransferRow(LedgerBase):
    """One movement of ``amount_cents`` from a debit account to a credit account."""

    __tablename__ = "transfers"
    __table_args__ = (
        CheckConstraint("char_length(id) BETWEEN 1 AND 128", name="id_length"),
        CheckConstraint("amount_cents > 0 AND amount_cents <= 1000000000000", name="amount"),
        CheckConstraint("debit_account_id <> credit_account_id", name="accounts_differ"),
        CheckConstraint(f"kind IN ({_KINDS_SQL})", name="kind"),
        CheckConstraint(
            "(reverses_id IS NOT NULL) = (kind IN ('reversal', 'entry_refund'))", name="reverses"
        ),
        CheckConstraint("jsonb_typeof(reference) = 'object'", name="reference_object"),
        CheckConstraint("jsonb_typeof(metadata) = 'object'", name="metadata_object"),
        # A provider's payment is credited once, whichever route (webhook event or operator
        # deposit) brings it; a concurrent second credit loses the race on this index.
        Index(
            "uq_transfers_deposit_payment",
            text("(reference ->> 'payment')"),
            unique=True,
            postgresql_where=text(PAYMENT_INDEX_PREDICATE),
        ),
    )

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    """Chosen by the caller; the idempotency key."""
    batch_id: Mapped[uuid.UUID] = mapped_column()
    """The atomic batch this transfer was written in."""
    batch_position: Mapped[int] = mapped_column(Integer)
    # No index on the account columns: statements read entries, which are indexed by
    # (account, version), and every index is paid for on the write path.
    debit_account_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("accounts.id"))
    credit_account_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("accounts.id"))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    kind: Mapped[str] = mapped_column(String(32))
    reverses_id: Mapped[str | None] = mapped_column(
        String(128), ForeignKey("transfers.id"), unique=True
    )
    """The transfer this one reverses or refunds (each can be reversed at most once)."""
    reference: Mapped[dict[str, Any]] = mapped_column(JSONB)
    """What the money is for: table, round, tournament, payment..."""
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB)
    """Free-form context (who asked, notes)."""
    request_sha256: Mapped[bytes] = mapped_column(LargeBinary(32))
    """SHA-256 of the canonical request; a replay must match it."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)


class EntryRow(LedgerBase):
    """One leg of a transfer on one account, with the balance before and after."""

    __tablename__ = "entries"
    __table_args__ = (
        CheckConstraint("amount_cents <> 0", name="amount_not_zero"),
        CheckConstraint(
            "balance_after_cents = balance_before_cents + amount_cents", name="balance_arithmetic"
        ),
        CheckConstraint("account_version >= 1", name="account_version"),
        UniqueConstraint("account_id", "account_version"),
        UniqueConstraint("transfer_id", "account_id"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    transfer_id: Mapped[str] = mapped_column(String(128), ForeignKey("transfers.id"))
    account_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("accounts.id"))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    """Signed: negative on the debit account, positive on the credit account."""
    balance_before_cents: Mapped[int] = mapped_column(BigInteger)
    balance_after_cents: Mapped[int] = mapped_column(BigInteger)
    account_version: Mapped[int] = mapped_column(BigInteger)
    """The account's version after this entry (1 for its first entry)."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)


class SettlementRow(LedgerBase):
    """The settlement of one table: the fee snapshot, the pool, the split."""

    __tablename__ = "settlements"
    __table_args__ = (
        CheckConstraint("char_length(id) BETWEEN 1 AND 100", name="id_length"),
        CheckConstraint("fee_bps BETWEEN 0 AND 10000", name="fee_bps"),
        CheckConstraint(
            "pool_cents >= 0 AND fee_cents >= 0 AND fee_cents <= pool_cents", name="pool"
        ),
        CheckConstraint("jsonb_typeof(winners) = 'array'", name="winners_array"),
        CheckConstraint("jsonb_typeof(payouts) = 'array'", name="payouts_array"),
    )

    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    table_id: Mapped[uuid.UUID] = mapped_column(index=True)
    escrow_account_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("accounts.id"))
    fee_bps: Mapped[int] = mapped_column(Integer)
    """The fee rate snapshotted when the table was created."""
    pool_cents: Mapped[int] = mapped_column(BigInteger)
    fee_cents: Mapped[int] = mapped_column(BigInteger)
    winners: Mapped[list[str]] = mapped_column(JSONB)
    """User ids in the order used for the remainder (first winners get the extra centavos)."""
    payouts: Mapped[list[int]] = mapped_column(JSONB)
    """Centavos paid to each winner, same order as ``winners``."""
    reference: Mapped[dict[str, Any]] = mapped_column(JSONB)
    request_sha256: Mapped[bytes] = mapped_column(LargeBinary(32))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)


ACCOUNTS = cast("Table", AccountRow.__table__)
"""Core view of ``ledger.accounts`` (the write path uses Core statements)."""
TRANSFERS = cast("Table", TransferRow.__table__)
"""Core view of ``ledger.transfers``."""
ENTRIES = cast("Table", EntryRow.__table__)
"""Core view of ``ledger.entries``."""
SETTLEMENTS = cast("Table", SettlementRow.__table__)
"""Core view of ``ledger.settlements``."""


def id_in(column: Any, values: Any) -> Any:
    """``column = ANY(:values)``: one array parameter, so a single prepared statement
    serves lists of every length (``IN`` would be re-rendered per length)."""
    element = Uuid() if isinstance(column.type, Uuid) else String()
    return column == any_(bindparam(None, list(values), type_=ARRAY(element)))
