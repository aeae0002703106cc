"""Prometheus counters of the ledger.

Written transfers are counted when the caller's transaction commits (a batch the caller
rolls back moved no money); refusals and replays are counted when they happen.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from prometheus_client import Counter
from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from ledger.records import TransferResult

__all__ = (
    "REFUSALS",
    "REPLAYS",
    "TRANSFERRED_CENTS",
    "TRANSFERS",
    "count_on_commit",
    "count_refusal",
    "count_replay",
)

TRANSFERS = Counter(
    "raiz_ledger_transfers",
    "Transfers committed to the ledger, by kind.",
    ["kind"],
)
TRANSFERRED_CENTS = Counter(
    "raiz_ledger_transferred_cents",
    "Centavos moved by committed transfers, by kind.",
    ["kind"],
)
REFUSALS = Counter(
    "raiz_ledger_refusals",
    "Ledger operations refused, by error code.",
    ["code"],
)
REPLAYS = Counter(
    "raiz_ledger_replays",
    "Ledger operations answered from the record of an earlier identical request.",
)

_PENDING_KEY = "raiz_ledger_pending_transfers"


def count_on_commit(session: AsyncSession, results: Iterable[TransferResult]) -> None:
    """Count ``results`` once the transaction of ``session`` commits."""
    pending: list[tuple[str, int]] = session.info.setdefault(_PENDING_KEY, [])
    pending.extend((str(result.kind), result.amount_cents) for result in results)


def count_refusal(code: str) -> None:
    """Count one refused operation."""
    REFUSALS.labels(code=code).inc()


def count_replay() -> None:
    """Count one replayed operation."""
    REPLAYS.inc()


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    pending: list[tuple[str, int]] = session.info.pop(_PENDING_KEY, [])
    for kind, amount_cents in pending:
        TRANSFERS.labels(kind=kind).inc()
        TRANSFERRED_CENTS.labels(kind=kind).inc(amount_cents)


@event.listens_for(Session, "after_transaction_end")
def _after_transaction_end(session: Session, transaction: SessionTransaction) -> None:
    # The outermost transaction ended: committed ones were counted just before; a rolled
    # back one moved nothing.  Savepoints ending inside it change nothing here.
    if transaction.parent is None:
        session.info.pop(_PENDING_KEY, None)
