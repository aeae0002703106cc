"""HTTP payloads of the wallet context (amounts are integer centavos everywhere)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Annotated, Any, Literal

import msgspec

from ledger import MAX_TRANSFER_CENTS, Account, Statement, TransferResult

__all__ = (
    "IDEMPOTENCY_KEY_PATTERN",
    "AccountRead",
    "LegRead",
    "MoneyMovementCreate",
    "PaymentEvent",
    "PaymentEventResult",
    "StatementLineRead",
    "StatementRead",
    "TransferRead",
    "WalletRead",
)

IDEMPOTENCY_KEY_PATTERN = r"^[!-~]{1,100}(?!\n)$"
"""1..100 printable ASCII characters without spaces (a UUID is a good key).

msgspec searches the pattern, and ``$`` alone also matches before a final newline: the
lookahead refuses ``"evt_1\n"``, which would otherwise be another event than ``"evt_1"``."""

AmountCents = Annotated[
    int,
    msgspec.Meta(
        ge=1,
        le=MAX_TRANSFER_CENTS,
        description="Integer centavos (R$5.00 is 500).",
        examples=[500],
    ),
]


class LegRead(msgspec.Struct):
    """One side of a transfer on one account."""

    account_id: uuid.UUID
    amount_cents: int
    """Signed change of the account's balance."""
    balance_before_cents: int
    balance_after_cents: int
    account_version: int


class TransferRead(msgspec.Struct):
    """A recorded transfer; ``replayed`` is true when the request repeated an earlier one."""

    id: str
    kind: str
    amount_cents: int
    currency: str
    debit: LegRead
    credit: LegRead
    reference: dict[str, Any]
    metadata: dict[str, Any]
    reverses_id: str | None
    created_at: dt.datetime
    replayed: bool

    @classmethod
    def of(cls, transfer: TransferResult) -> TransferRead:
        """The public form of ``transfer`` (the legs are converted field by field too)."""
        return msgspec.convert(transfer, cls, from_attributes=True)


class AccountRead(msgspec.Struct):
    """A ledger account."""

    id: uuid.UUID
    type: str
    currency: str
    owner_id: uuid.UUID | None
    """The user of a wallet or the table of an escrow."""
    may_go_negative: bool
    balance_cents: int
    version: int
    created_at: dt.datetime
    closed_at: dt.datetime | None

    @classmethod
    def of(cls, account: Account) -> AccountRead:
        """The public form of ``account``."""
        return msgspec.convert(account, cls, from_attributes=True)


class WalletRead(msgspec.Struct):
    """The caller's wallet (balance 0 and no account id before the first deposit)."""

    user_id: uuid.UUID
    account_id: uuid.UUID | None
    currency: str
    balance_cents: int
    version: int


class StatementLineRead(msgspec.Struct):
    """One entry of a statement."""

    entry_id: int
    transfer_id: str
    kind: str
    amount_cents: int
    """Signed: negative when money left the account."""
    balance_before_cents: int
    balance_after_cents: int
    account_version: int
    counterparty_account_id: uuid.UUID
    reference: dict[str, Any]
    """What the money was for: table, round, tournament, payment..."""
    created_at: dt.datetime


class StatementRead(msgspec.Struct):
    """A page of entries, newest first."""

    account_id: uuid.UUID | None
    balance_cents: int
    lines: list[StatementLineRead]
    next_before_version: int | None
    """Pass as ``before_version`` to get the next (older) page; null on the last page."""

    @classmethod
    def of(cls, statement: Statement) -> StatementRead:
        """The public form of ``statement``."""
        return cls(
            account_id=statement.account.id,
            balance_cents=statement.account.balance_cents,
            lines=msgspec.convert(statement.lines, list[StatementLineRead], from_attributes=True),
            next_before_version=statement.next_before_version,
        )


class MoneyMovementCreate(msgspec.Struct, forbid_unknown_fields=True):
    """A deposit or withdrawal by an operator."""

    amount_cents: AmountCents
    payment_reference: Annotated[str, msgspec.Meta(min_length=1, max_length=128)] | None = None
    """The payment provider's id of the money movement, if any."""
    note: Annotated[str, msgspec.Meta(max_length=500)] | None = None


class PaymentEvent(msgspec.Struct):
    """A payment provider's notification (unknown fields are ignored)."""

    event_id: Annotated[str, msgspec.Meta(pattern=IDEMPOTENCY_KEY_PATTERN)]
    """The provider's event id: the same event is applied once."""
    type: Literal["deposit.succeeded"]
    user_id: uuid.UUID
    amount_cents: AmountCents
    currency: Literal["BRL"]
    payment_id: Annotated[str, msgspec.Meta(min_length=1, max_length=128)]


class PaymentEventResult(msgspec.Struct):
    """What a payment event did (a replay answers with the original transfer)."""

    event_id: str
    transfer: TransferRead
    replayed: bool
