"""Wallet ledger: accounts and double-entry transfers. The only code that writes balances.

The game service uses :class:`Ledger` on its own session (the ledger never commits);
operators and compliance read accounts and statements; ``raiz ledger reconcile`` runs
:func:`reconcile`.  This package does not import ``app``.
"""

from __future__ import annotations

from ledger.constants import (
    DEFAULT_CURRENCY,
    MAX_TRANSFER_CENTS,
    AccountType,
    TransferKind,
    account_id_for,
)
from ledger.errors import ErrorCode, LedgerError
from ledger.reconcile import Problem, ReconcileReport, reconcile
from ledger.records import (
    Account,
    EntryLeg,
    Settlement,
    Statement,
    StatementLine,
    TransferRequest,
    TransferResult,
)
from ledger.service import Ledger
from ledger.settlement import split_settlement

__all__ = (
    "DEFAULT_CURRENCY",
    "MAX_TRANSFER_CENTS",
    "Account",
    "AccountType",
    "EntryLeg",
    "ErrorCode",
    "Ledger",
    "LedgerError",
    "Problem",
    "ReconcileReport",
    "Settlement",
    "Statement",
    "StatementLine",
    "TransferKind",
    "TransferRequest",
    "TransferResult",
    "account_id_for",
    "reconcile",
    "split_settlement",
)
