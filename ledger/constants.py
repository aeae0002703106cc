"""Account types, transfer kinds, limits and deterministic account ids.

Every limit of the ledger is a named constant here, units last in the name.
"""

from __future__ import annotations

import enum
import uuid
from types import MappingProxyType

__all__ = (
    "ACCOUNT_NAMESPACE",
    "CURRENCIES",
    "DEFAULT_CURRENCY",
    "FEE_BPS_DENOMINATOR",
    "KIND_ROUTES",
    "MAX_BALANCE_CENTS",
    "MAX_BATCH_TRANSFERS",
    "MAX_JSON_BYTES",
    "MAX_SETTLEMENT_ID_LENGTH",
    "MAX_STATEMENT_LIMIT",
    "MAX_TRANSFER_CENTS",
    "MAX_TRANSFER_ID_LENGTH",
    "MAX_WINNERS",
    "MAY_GO_NEGATIVE",
    "OWNED_ACCOUNT_TYPES",
    "SYSTEM_ACCOUNT_TYPES",
    "AccountType",
    "TransferKind",
    "account_id_for",
)

CURRENCIES = ("BRL",)
"""Currencies the ledger keeps; amounts are integer minor units (centavos) everywhere."""
DEFAULT_CURRENCY = "BRL"
"""The currency of every game-facing operation."""

MAX_TRANSFER_CENTS = 10**12
"""Largest amount of one transfer (R$ 10 billion); the column is a bigint."""
MAX_BALANCE_CENTS = 10**15
"""Largest absolute balance an account may reach (far inside bigint)."""
MAX_BATCH_TRANSFERS = 256
"""Most transfers in one atomic batch."""
MAX_TRANSFER_ID_LENGTH = 128
"""Longest client-chosen transfer id."""
MAX_SETTLEMENT_ID_LENGTH = 100
"""Longest settlement id (its transfers' ids are derived from it and must fit)."""
MAX_WINNERS = 100
"""Most co-winners of one settlement."""
MAX_JSON_BYTES = 4096
"""Largest canonical JSON size of a transfer's reference or metadata."""
MAX_STATEMENT_LIMIT = 500
"""Most statement lines returned per page."""
FEE_BPS_DENOMINATOR = 10_000
"""Basis points in one whole: fee = floor(pool * fee_bps / 10 000)."""


class AccountType(enum.StrEnum):
    """What an account stands for."""

    PLAYER_WALLET = "player_wallet"
    """A player's money (one per user and currency); never negative."""
    TABLE_ESCROW = "table_escrow"
    """Entries paid into one table until refunded or settled; never negative."""
    HOUSE_REVENUE = "house_revenue"
    """The platform fee collected at settlements; never negative."""
    PRIZE_FUND = "prize_fund"
    """The operator's money funding cash prizes of free tournaments; may go negative."""
    CASH_IN = "cash_in"
    """Clearing account of deposits (its negative balance is money received)."""
    CASH_OUT = "cash_out"
    """Clearing account of withdrawals (its positive balance is money paid out)."""


MAY_GO_NEGATIVE = MappingProxyType(
    {
        AccountType.PLAYER_WALLET: False,
        AccountType.TABLE_ESCROW: False,
        AccountType.HOUSE_REVENUE: False,
        AccountType.PRIZE_FUND: True,
        AccountType.CASH_IN: True,
        AccountType.CASH_OUT: True,
    }
)
"""Whether each account type may have a balance below zero (a database check enforces it)."""

OWNED_ACCOUNT_TYPES = frozenset({AccountType.PLAYER_WALLET, AccountType.TABLE_ESCROW})
"""Types with one account per owner (a user or a table) and currency."""
SYSTEM_ACCOUNT_TYPES = (
    AccountType.HOUSE_REVENUE,
    AccountType.PRIZE_FUND,
    AccountType.CASH_IN,
    AccountType.CASH_OUT,
)
"""Types with exactly one account per currency, created by the migration."""


class TransferKind(enum.StrEnum):
    """Why money moved; each kind allows only some (debit type, credit type) routes."""

    DEPOSIT = "deposit"
    WITHDRAWAL = "withdrawal"
    ENTRY_FEE = "entry_fee"
    ENTRY_REFUND = "entry_refund"
    HOUSE_FEE = "house_fee"
    PAYOUT = "payout"
    PRIZE_FUNDING = "prize_funding"
    REVERSAL = "reversal"
    ADJUSTMENT = "adjustment"


_A = AccountType
KIND_ROUTES: MappingProxyType[TransferKind, frozenset[tuple[AccountType, AccountType]] | None] = (
    MappingProxyType(
        {
            TransferKind.DEPOSIT: frozenset({(_A.CASH_IN, _A.PLAYER_WALLET)}),
            TransferKind.WITHDRAWAL: frozenset({(_A.PLAYER_WALLET, _A.CASH_OUT)}),
            TransferKind.ENTRY_FEE: frozenset({(_A.PLAYER_WALLET, _A.TABLE_ESCROW)}),
            TransferKind.ENTRY_REFUND: frozenset({(_A.TABLE_ESCROW, _A.PLAYER_WALLET)}),
            TransferKind.HOUSE_FEE: frozenset({(_A.TABLE_ESCROW, _A.HOUSE_REVENUE)}),
            TransferKind.PAYOUT: frozenset({(_A.TABLE_ESCROW, _A.PLAYER_WALLET)}),
            TransferKind.PRIZE_FUNDING: frozenset({(_A.PRIZE_FUND, _A.TABLE_ESCROW)}),
            # A reversal mirrors its original transfer (checked separately); an
            # adjustment is an operator correction between any two accounts.
            TransferKind.REVERSAL: None,
            TransferKind.ADJUSTMENT: None,
        }
    )
)
"""Allowed (debit account type, credit account type) per kind; ``None`` allows any."""

ACCOUNT_NAMESPACE = uuid.UUID("6f1d3c52-8b0e-4c1a-9f7e-2d4b5a6c7e80")
"""Namespace of the deterministic (UUIDv5) account ids; the migration uses the same value."""


def account_id_for(
    account_type: AccountType, currency: str, owner_id: uuid.UUID | None = None
) -> uuid.UUID:
    """The id of the account of ``account_type`` for ``owner_id`` (None for system accounts).

    Ids are derived, not stored in a lookup table, so callers (and retries) always name
    the same account, and creating it twice is a no-op.
    """
    owner = "-" if owner_id is None else str(owner_id)
    return uuid.uuid5(ACCOUNT_NAMESPACE, f"{account_type.value}:{currency}:{owner}")
