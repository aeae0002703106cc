"""Writing one atomic batch of transfers inside the caller's transaction.

The order is fixed (pgledger / TigerBeetle style):

1. pure checks of every request (no database);
2. lock every touched account with ``SELECT ... FOR UPDATE`` in ascending id order, so
   two batches touching the same accounts always queue in the same order (no deadlock);
3. idempotency: ids already recorded with the same body are a replay (the original
   results are returned, nothing is written); any other overlap is a conflict;
4. the rules of the locked accounts, applied transfer by transfer on a copy of the
   balances (currency, closed, kind route, reversal, funds);
5. the write, which cannot fail a business rule any more: one statement inserts the
   transfers, their entries (balance before/after, account version) and moves the
   account rows, all or nothing.

Steps 3 and 5 are separate statements on purpose: after waiting for a lock in step 2,
only a new statement sees what the other transaction committed.  A concurrent writer of
one of our ids (or of a reversal of our target) that commits before our write makes the
write skip everything (``ON CONFLICT DO NOTHING``): :class:`LostRace` tells the caller
to run the operation again, which then ends as a replay or a named refusal.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError

from ledger.constants import KIND_ROUTES, MAX_BALANCE_CENTS, AccountType, TransferKind
from ledger.errors import ErrorCode, LedgerError
from ledger.models import ACCOUNTS, ENTRIES, PAYMENT_INDEX_PREDICATE, TRANSFERS, id_in
from ledger.records import (
    EntryLeg,
    TransferRequest,
    TransferResult,
    canonical_json,
    validate_batch,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Result
    from sqlalchemy.ext.asyncio import AsyncSession
    from sqlalchemy.sql.base import Executable

__all__ = (
    "RACE_CONSTRAINTS",
    "LockedAccount",
    "LostRace",
    "Posting",
    "claim",
    "load_results",
)

RACE_CONSTRAINTS = frozenset({"pk_settlements"})
"""Unique indexes a concurrent writer can beat us to; losing means "run again"."""


WRITE_BATCH = text(
    """
    WITH new_transfers AS (
        INSERT INTO ledger.transfers (
            id, batch_id, batch_position, debit_account_id, credit_account_id, amount_cents,
            currency, kind, reverses_id, reference, metadata, request_sha256)
        SELECT t.id, CAST(:batch_id AS uuid), t.position, t.debit, t.credit, t.amount,
               t.currency, t.kind, t.reverses, CAST(t.reference AS jsonb),
               CAST(t.metadata AS jsonb), t.hash
        FROM unnest(CAST(:ids AS text[]), CAST(:positions AS int[]), CAST(:debits AS uuid[]),
                    CAST(:credits AS uuid[]), CAST(:amounts AS bigint[]),
                    CAST(:currencies AS text[]), CAST(:kinds AS text[]),
                    CAST(:reverses AS text[]), CAST(:references AS text[]),
                    CAST(:metadatas AS text[]), CAST(:hashes AS bytea[]))
             AS t(id, position, debit, credit, amount, currency, kind, reverses, reference,
                  metadata, hash)
        ON CONFLICT DO NOTHING
        RETURNING created_at
    ), outcome AS (
        SELECT COUNT(*) = :count AS complete, MIN(created_at) AS created_at FROM new_transfers
    ), new_entries AS (
        INSERT INTO ledger.entries (
            transfer_id, account_id, amount_cents, balance_before_cents, balance_after_cents,
            account_version)
        SELECT e.transfer_id, e.account_id, e.amount, e.before, e.after, e.version
        FROM unnest(CAST(:entry_transfers AS text[]), CAST(:entry_accounts AS uuid[]),
                    CAST(:entry_amounts AS bigint[]), CAST(:entry_befores AS bigint[]),
                    CAST(:entry_afters AS bigint[]), CAST(:entry_versions AS bigint[]))
             AS e(transfer_id, account_id, amount, before, after, version)
        WHERE (SELECT complete FROM outcome)
    ), moved AS (
        UPDATE ledger.accounts AS account
        SET balance_cents = v.balance, version = v.version
        FROM unnest(CAST(:account_ids AS uuid[]), CAST(:balances AS bigint[]),
                    CAST(:versions AS bigint[])) AS v(id, balance, version)
        WHERE account.id = v.id AND (SELECT complete FROM outcome)
        RETURNING account.id
    )
    SELECT outcome.complete, outcome.created_at, (SELECT COUNT(*) FROM moved) AS accounts_moved
    FROM outcome
    """
)
"""The whole write of a batch in one statement (one round trip).

``ON CONFLICT DO NOTHING`` waits for a concurrent writer of the same transfer id (or
reversal target) and skips the row if that writer commits: entries and balances are then
not written either, and ``complete`` is false.
"""


class LostRace(Exception):
    """A concurrent transaction committed a row with one of our unique keys first."""


@dataclass(slots=True)
class LockedAccount:
    """An account row locked for this transaction, with its running balance."""

    id: uuid.UUID
    type: AccountType
    currency: str
    may_go_negative: bool
    balance_cents: int
    version: int
    closed: bool


@dataclass(frozen=True, slots=True)
class _Target:
    """A transfer named by a reversal or refund."""

    id: str
    kind: str
    debit_account_id: uuid.UUID
    credit_account_id: uuid.UUID
    amount_cents: int
    reversed: bool


async def claim(
    session: AsyncSession, statement: Executable, parameters: list[dict[str, Any]] | None = None
) -> Result[Any]:
    """Execute an INSERT of rows with unique keys a concurrent writer may own already.

    :class:`LostRace` when it does (it committed first); the caller's savepoint is rolled
    back and the operation runs again, seeing the winner's rows.
    """
    try:
        return await session.execute(statement, parameters)
    except IntegrityError as error:
        if constraint_of(error) in RACE_CONSTRAINTS:
            raise LostRace from error
        raise


def _payment_credited(payment: str, transfer_id: str) -> LedgerError:
    return LedgerError(
        ErrorCode.PAYMENT_ALREADY_CREDITED,
        "This payment was already credited.",
        {"payment": payment, "transfer_id": transfer_id},
    )


def constraint_of(error: IntegrityError) -> str | None:
    """The name of the constraint an ``IntegrityError`` from asyncpg violated."""
    for candidate in (error.orig, getattr(error.orig, "__cause__", None)):
        name = getattr(candidate, "constraint_name", None)
        if name:
            return str(name)
    return None


class Posting:
    """The write path of the ledger on one session (never commits)."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def lock(self, account_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, LockedAccount]:
        """Lock the accounts that exist among ``account_ids``, in ascending id order."""
        ids = sorted(set(account_ids))
        rows = await self._session.execute(
            select(
                ACCOUNTS.c.id,
                ACCOUNTS.c.type,
                ACCOUNTS.c.currency,
                ACCOUNTS.c.may_go_negative,
                ACCOUNTS.c.balance_cents,
                ACCOUNTS.c.version,
                ACCOUNTS.c.closed_at,
            )
            .where(id_in(ACCOUNTS.c.id, ids))
            .order_by(ACCOUNTS.c.id)
            .with_for_update()
        )
        return {
            row.id: LockedAccount(
                id=row.id,
                type=AccountType(row.type),
                currency=row.currency,
                may_go_negative=row.may_go_negative,
                balance_cents=row.balance_cents,
                version=row.version,
                closed=row.closed_at is not None,
            )
            for row in rows
        }

    async def post(
        self,
        requests: Sequence[TransferRequest],
        locked: dict[uuid.UUID, LockedAccount] | None = None,
    ) -> list[TransferResult]:
        """Write ``requests`` atomically, or replay them, or raise :class:`LedgerError`.

        ``locked`` may carry accounts the caller already locked in this transaction (in
        id order, together with every other account of the batch).
        """
        validate_batch(requests)
        touched = [
            account_id
            for request in requests
            for account_id in (request.debit_account_id, request.credit_account_id)
        ]
        if locked is None or not set(touched) <= locked.keys():
            locked = await self.lock(touched)
        for index, request in enumerate(requests):
            for account_id in (request.debit_account_id, request.credit_account_id):
                if account_id not in locked:
                    raise LedgerError(
                        ErrorCode.ACCOUNT_NOT_FOUND,
                        "No such account.",
                        {"index": index, "transfer_id": request.id, "account_id": str(account_id)},
                    )
        replayed = await self.replay_or_conflict(requests)
        if replayed is not None:
            return replayed
        await self._refuse_credited_payments(requests)
        targets = await self._targets(requests)
        legs = _apply(requests, locked, targets)
        return await self._write(requests, legs, locked)

    async def replay_or_conflict(
        self, requests: Sequence[TransferRequest]
    ) -> list[TransferResult] | None:
        """The original results if every id is recorded with the same body; None if no id
        is recorded; ``idempotency_conflict`` otherwise."""
        ids = [request.id for request in requests]
        rows = await self._session.execute(
            select(TRANSFERS.c.id, TRANSFERS.c.request_sha256).where(id_in(TRANSFERS.c.id, ids))
        )
        recorded = {row.id: bytes(row.request_sha256) for row in rows}
        if not recorded:
            return None
        differing = [r.id for r in requests if r.id in recorded and recorded[r.id] != r.sha256()]
        missing = [request.id for request in requests if request.id not in recorded]
        if differing or missing:
            raise LedgerError(
                ErrorCode.IDEMPOTENCY_CONFLICT,
                "A transfer id was already used for a different request.",
                {"transfer_ids": differing or sorted(recorded), "not_recorded": missing},
            )
        return await load_results(self._session, ids, replayed=True)

    async def _refuse_credited_payments(self, requests: Sequence[TransferRequest]) -> None:
        """``payment_already_credited`` for a deposit of a provider payment (its reference's
        ``payment``) that another deposit already credited: a payment is money received once,
        whether its webhook event, a second event for it or an operator brings it."""
        payments: dict[str, str] = {}
        for request in requests:
            payment = request.reference.get("payment")
            if request.kind != TransferKind.DEPOSIT or not isinstance(payment, str):
                continue
            if payment in payments:
                raise _payment_credited(payment, payments[payment])
            payments[payment] = request.id
        if not payments:
            return
        paid = TRANSFERS.c.reference["payment"].astext
        row = (
            await self._session.execute(
                select(paid, TRANSFERS.c.id)
                .where(
                    # literally the index's predicate, so the planner uses the index
                    text(PAYMENT_INDEX_PREDICATE),
                    paid.in_(sorted(payments)),
                )
                .order_by(TRANSFERS.c.id)
                .limit(1)
            )
        ).first()
        if row is not None:
            raise _payment_credited(row[0], row[1])

    async def _targets(self, requests: Sequence[TransferRequest]) -> dict[str, _Target]:
        wanted = [request.reverses_id for request in requests if request.reverses_id]
        if not wanted:
            return {}
        reverser = TRANSFERS.alias("reverser")
        reversed_flag = (
            select(reverser.c.id).where(reverser.c.reverses_id == TRANSFERS.c.id).exists()
        )
        rows = await self._session.execute(
            select(
                TRANSFERS.c.id,
                TRANSFERS.c.kind,
                TRANSFERS.c.debit_account_id,
                TRANSFERS.c.credit_account_id,
                TRANSFERS.c.amount_cents,
                reversed_flag.label("reversed"),
            ).where(id_in(TRANSFERS.c.id, wanted))
        )
        return {
            row.id: _Target(
                id=row.id,
                kind=row.kind,
                debit_account_id=row.debit_account_id,
                credit_account_id=row.credit_account_id,
                amount_cents=row.amount_cents,
                reversed=bool(row.reversed),
            )
            for row in rows
        }

    async def _write(
        self,
        requests: Sequence[TransferRequest],
        legs: list[tuple[EntryLeg, EntryLeg]],
        locked: dict[uuid.UUID, LockedAccount],
    ) -> list[TransferResult]:
        batch_id = uuid.uuid4()
        currency = {request.id: locked[request.debit_account_id].currency for request in requests}
        touched = sorted({leg.account_id for pair in legs for leg in pair})
        entries = [leg for pair in legs for leg in pair]
        row = (
            await self._session.execute(
                WRITE_BATCH,
                {
                    "batch_id": batch_id,
                    "count": len(requests),
                    "ids": [request.id for request in requests],
                    "positions": list(range(len(requests))),
                    "debits": [request.debit_account_id for request in requests],
                    "credits": [request.credit_account_id for request in requests],
                    "amounts": [request.amount_cents for request in requests],
                    "currencies": [currency[request.id] for request in requests],
                    "kinds": [str(request.kind) for request in requests],
                    "reverses": [request.reverses_id for request in requests],
                    "references": [canonical_json(dict(r.reference)) for r in requests],
                    "metadatas": [canonical_json(dict(r.metadata)) for r in requests],
                    "hashes": [request.sha256() for request in requests],
                    "entry_transfers": [request.id for request in requests for _ in (0, 1)],
                    "entry_accounts": [leg.account_id for leg in entries],
                    "entry_amounts": [leg.amount_cents for leg in entries],
                    "entry_befores": [leg.balance_before_cents for leg in entries],
                    "entry_afters": [leg.balance_after_cents for leg in entries],
                    "entry_versions": [leg.account_version for leg in entries],
                    "account_ids": touched,
                    "balances": [locked[account_id].balance_cents for account_id in touched],
                    "versions": [locked[account_id].version for account_id in touched],
                },
            )
        ).one()
        if not row.complete:
            # A concurrent transaction committed one of our ids (or reversed our target)
            # first.  With one transfer nothing was written; a batch runs in a savepoint.
            raise LostRace
        assert row.accounts_moved == len(touched)
        return [
            TransferResult(
                id=request.id,
                batch_id=batch_id,
                kind=TransferKind(request.kind),
                amount_cents=request.amount_cents,
                currency=currency[request.id],
                debit=debit,
                credit=credit,
                reference=dict(request.reference),
                metadata=dict(request.metadata),
                reverses_id=request.reverses_id,
                created_at=row.created_at,
            )
            for request, (debit, credit) in zip(requests, legs, strict=True)
        ]


def _apply(
    requests: Sequence[TransferRequest],
    locked: dict[uuid.UUID, LockedAccount],
    targets: dict[str, _Target],
) -> list[tuple[EntryLeg, EntryLeg]]:
    """Check each request against the locked accounts and move the running balances.

    Mutates ``locked`` (balances and versions after the batch); raises the first refusal.
    """
    reversed_in_batch: set[str] = set()
    legs = []
    for index, request in enumerate(requests):
        where: dict[str, Any] = {"index": index, "transfer_id": request.id}
        debit = locked[request.debit_account_id]
        credit = locked[request.credit_account_id]
        if debit.currency != credit.currency:
            raise LedgerError(
                ErrorCode.CURRENCY_MISMATCH,
                "Both accounts of a transfer must have the same currency.",
                {**where, "debit_currency": debit.currency, "credit_currency": credit.currency},
            )
        for account in (debit, credit):
            if account.closed:
                raise LedgerError(
                    ErrorCode.ACCOUNT_CLOSED,
                    "The account is closed.",
                    {**where, "account_id": str(account.id)},
                )
        routes = KIND_ROUTES[TransferKind(request.kind)]
        if routes is not None and (debit.type, credit.type) not in routes:
            raise LedgerError(
                ErrorCode.ACCOUNT_TYPE_NOT_ALLOWED,
                f"A {request.kind} transfer cannot move money from a {debit.type} "
                f"to a {credit.type}.",
                {**where, "debit_type": str(debit.type), "credit_type": str(credit.type)},
            )
        if request.reverses_id is not None:
            _check_reversal(request, targets, reversed_in_batch, where)
            reversed_in_batch.add(request.reverses_id)
        if not debit.may_go_negative and debit.balance_cents < request.amount_cents:
            raise LedgerError(
                ErrorCode.INSUFFICIENT_FUNDS,
                "The account does not have enough money.",
                {
                    **where,
                    "account_id": str(debit.id),
                    "balance_cents": debit.balance_cents,
                    "amount_cents": request.amount_cents,
                },
            )
        if (
            debit.balance_cents - request.amount_cents < -MAX_BALANCE_CENTS
            or credit.balance_cents + request.amount_cents > MAX_BALANCE_CENTS
        ):
            raise LedgerError(
                ErrorCode.BALANCE_LIMIT_EXCEEDED,
                "The transfer would take a balance past the ledger's limit.",
                {**where, "max_balance_cents": MAX_BALANCE_CENTS},
            )
        legs.append((_move(debit, -request.amount_cents), _move(credit, request.amount_cents)))
    return legs


def _check_reversal(
    request: TransferRequest,
    targets: dict[str, _Target],
    reversed_in_batch: set[str],
    where: dict[str, Any],
) -> None:
    assert request.reverses_id is not None
    target = targets.get(request.reverses_id)
    details = {**where, "reverses_id": request.reverses_id}
    if target is None:
        raise LedgerError(ErrorCode.TRANSFER_NOT_FOUND, "No such transfer to reverse.", details)
    if request.kind == TransferKind.ENTRY_REFUND and target.kind != TransferKind.ENTRY_FEE:
        raise LedgerError(ErrorCode.NOT_AN_ENTRY_FEE, "Only an entry fee can be refunded.", details)
    if (
        request.debit_account_id != target.credit_account_id
        or request.credit_account_id != target.debit_account_id
        or request.amount_cents != target.amount_cents
    ):
        raise LedgerError(
            ErrorCode.REVERSAL_MISMATCH,
            "A reversal moves the original amount back between the original accounts.",
            {**details, "amount_cents": target.amount_cents},
        )
    if target.reversed or target.id in reversed_in_batch:
        if target.kind == TransferKind.ENTRY_FEE:
            raise LedgerError(
                ErrorCode.ENTRY_ALREADY_REFUNDED, "This entry was already refunded.", details
            )
        raise LedgerError(
            ErrorCode.ALREADY_REVERSED, "This transfer was already reversed.", details
        )


def _move(account: LockedAccount, amount_cents: int) -> EntryLeg:
    before = account.balance_cents
    account.balance_cents = before + amount_cents
    account.version += 1
    return EntryLeg(
        account_id=account.id,
        amount_cents=amount_cents,
        balance_before_cents=before,
        balance_after_cents=account.balance_cents,
        account_version=account.version,
    )


async def load_results(
    session: AsyncSession, transfer_ids: Sequence[str], *, replayed: bool
) -> list[TransferResult]:
    """Recorded transfers with both legs, in the order of ``transfer_ids`` (all must exist)."""
    rows = await session.execute(
        select(
            TRANSFERS.c.id,
            TRANSFERS.c.batch_id,
            TRANSFERS.c.kind,
            TRANSFERS.c.amount_cents,
            TRANSFERS.c.currency,
            TRANSFERS.c.debit_account_id,
            TRANSFERS.c.reference,
            TRANSFERS.c.metadata,
            TRANSFERS.c.reverses_id,
            TRANSFERS.c.created_at,
            ENTRIES.c.account_id,
            ENTRIES.c.amount_cents.label("entry_amount_cents"),
            ENTRIES.c.balance_before_cents,
            ENTRIES.c.balance_after_cents,
            ENTRIES.c.account_version,
        )
        .join(ENTRIES, ENTRIES.c.transfer_id == TRANSFERS.c.id)
        .where(id_in(TRANSFERS.c.id, list(transfer_ids)))
    )
    by_id: dict[str, dict[str, Any]] = {}
    for row in rows:
        record = by_id.setdefault(row.id, {"row": row})
        leg = EntryLeg(
            account_id=row.account_id,
            amount_cents=row.entry_amount_cents,
            balance_before_cents=row.balance_before_cents,
            balance_after_cents=row.balance_after_cents,
            account_version=row.account_version,
        )
        record["debit" if row.account_id == row.debit_account_id else "credit"] = leg
    results = []
    for transfer_id in transfer_ids:
        record = by_id[transfer_id]
        row = record["row"]
        results.append(
            TransferResult(
                id=row.id,
                batch_id=row.batch_id,
                kind=TransferKind(row.kind),
                amount_cents=row.amount_cents,
                currency=row.currency,
                debit=record["debit"],
                credit=record["credit"],
                reference=dict(row.reference),
                metadata=dict(row.metadata),
                reverses_id=row.reverses_id,
                created_at=row.created_at,
                replayed=replayed,
            )
        )
    return results
