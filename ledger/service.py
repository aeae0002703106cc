"""The ledger's interface: the only code that writes balances.

:class:`Ledger` works on a session whose transaction belongs to the caller: no method
commits.  The game service inserts a seat and calls :meth:`Ledger.take_entry` in one
transaction, then commits; on :class:`~ledger.errors.LedgerError` it rolls back.  Every
write method runs inside a savepoint, so a refusal leaves the caller's transaction
exactly as it was (the ledger wrote nothing), and a lost race with a concurrent
transaction is run again until it ends as a replay or a named refusal.

The session must use READ COMMITTED (PostgreSQL's default): after a lock wait the next
statement has to see what the other transaction committed.  One ledger write per
transaction never deadlocks: accounts are created, then locked, in ascending id order.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from ledger import metrics
from ledger._posting import LostRace, Posting, claim
from ledger.constants import DEFAULT_CURRENCY, MAY_GO_NEGATIVE, AccountType, TransferKind
from ledger.errors import ErrorCode, LedgerError
from ledger.models import ACCOUNTS, SETTLEMENTS, id_in
from ledger.reads import LedgerReads
from ledger.records import (
    Account,
    Settlement,
    TransferRequest,
    TransferResult,
    check_transfer_id,
    sha256_of,
    validate_settlement,
)
from ledger.settlement import split_settlement

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ("Ledger",)

T = TypeVar("T")
MAX_RACE_RETRIES = 3
"""Attempts after losing a unique-key race (each loss means another writer committed)."""


class Ledger(LedgerReads):
    """Accounts and transfers on the caller's session; never commits."""

    def __init__(self, session: AsyncSession, *, currency: str = DEFAULT_CURRENCY) -> None:
        super().__init__(session, currency=currency)
        self._posting = Posting(session)

    # -- accounts -----------------------------------------------------------------------

    async def ensure_player_wallet(self, user_id: uuid.UUID) -> Account:
        """``user_id``'s wallet, created (empty) if it does not exist."""
        await self._create_accounts([(AccountType.PLAYER_WALLET, user_id)])
        return await self.account(self.wallet_id(user_id))

    async def ensure_table_escrow(self, table_id: uuid.UUID) -> Account:
        """``table_id``'s escrow, created (empty) if it does not exist."""
        await self._create_accounts([(AccountType.TABLE_ESCROW, table_id)])
        return await self.account(self.escrow_id(table_id))

    async def system_account(self, account_type: AccountType) -> Account:
        """The house revenue, prize fund, cash-in or cash-out account (made if missing)."""
        account_id = self.system_account_id(account_type)
        await self._create_accounts([(account_type, None)])
        return await self.account(account_id)

    # -- transfers ----------------------------------------------------------------------

    async def submit(self, transfers: Sequence[TransferRequest]) -> list[TransferResult]:
        """Write an atomic batch (all or nothing), or replay it, or raise ``LedgerError``.

        Accounts must exist.  Replaying the same ids with the same bodies returns the
        original results (``replayed=True``) and writes nothing.
        """
        # A batch of several transfers may be partly written when a race is lost: only
        # a savepoint can undo that.  A single transfer writes all or nothing.
        return await self._guarded(
            lambda: self._posting.post(transfers), savepoint=len(transfers) != 1
        )

    async def reverse(
        self,
        transfer_id: str,
        original_transfer_id: str,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> TransferResult:
        """A correction: a new transfer moving the original amount back (at most once)."""
        return await self._undo(
            transfer_id, original_transfer_id, TransferKind.REVERSAL, "reverses", metadata
        )

    # -- money in and out ---------------------------------------------------------------

    async def deposit(
        self,
        transfer_id: str,
        user_id: uuid.UUID,
        amount_cents: int,
        *,
        reference: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> TransferResult:
        """Money received for a player: cash-in clearing → wallet (wallet made if new)."""
        return await self._single(
            [(AccountType.PLAYER_WALLET, user_id)],
            TransferRequest(
                id=transfer_id,
                debit_account_id=self.system_account_id(AccountType.CASH_IN),
                credit_account_id=self.wallet_id(user_id),
                amount_cents=amount_cents,
                kind=TransferKind.DEPOSIT,
                reference=dict(reference or {}),
                metadata=dict(metadata or {}),
            ),
        )

    async def withdraw(
        self,
        transfer_id: str,
        user_id: uuid.UUID,
        amount_cents: int,
        *,
        reference: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> TransferResult:
        """Money paid out to a player: wallet → cash-out clearing; never beyond the balance."""
        return await self._single(
            [(AccountType.PLAYER_WALLET, user_id)],
            TransferRequest(
                id=transfer_id,
                debit_account_id=self.wallet_id(user_id),
                credit_account_id=self.system_account_id(AccountType.CASH_OUT),
                amount_cents=amount_cents,
                kind=TransferKind.WITHDRAWAL,
                reference=dict(reference or {}),
                metadata=dict(metadata or {}),
            ),
        )

    # -- game-facing operations -----------------------------------------------------------

    async def take_entry(
        self,
        transfer_id: str,
        user_id: uuid.UUID,
        table_id: uuid.UUID,
        amount_cents: int,
        reference: Mapping[str, Any] | None = None,
    ) -> TransferResult:
        """The entry fee of a seat: wallet → the table's escrow.

        Call it in the transaction that inserts the seat; ``insufficient_funds`` means
        the player cannot sit.  ``reference`` gains ``table`` and ``user``.
        """
        return await self._single(
            [(AccountType.PLAYER_WALLET, user_id), (AccountType.TABLE_ESCROW, table_id)],
            TransferRequest(
                id=transfer_id,
                debit_account_id=self.wallet_id(user_id),
                credit_account_id=self.escrow_id(table_id),
                amount_cents=amount_cents,
                kind=TransferKind.ENTRY_FEE,
                reference={**(reference or {}), "table": str(table_id), "user": str(user_id)},
            ),
        )

    async def refund_entry(self, transfer_id: str, entry_transfer_id: str) -> TransferResult:
        """Give back exactly the amount of one entry fee (escrow → wallet), at most once."""
        return await self._undo(transfer_id, entry_transfer_id, TransferKind.ENTRY_REFUND, "entry")

    async def fund_prize(
        self,
        transfer_id: str,
        table_id: uuid.UUID,
        amount_cents: int,
        reference: Mapping[str, Any] | None = None,
    ) -> TransferResult:
        """The operator's prize money for a free table or tournament: prize fund → escrow."""
        return await self._single(
            [(AccountType.TABLE_ESCROW, table_id)],
            TransferRequest(
                id=transfer_id,
                debit_account_id=self.system_account_id(AccountType.PRIZE_FUND),
                credit_account_id=self.escrow_id(table_id),
                amount_cents=amount_cents,
                kind=TransferKind.PRIZE_FUNDING,
                reference={**(reference or {}), "table": str(table_id)},
            ),
        )

    async def settle_table(
        self,
        settlement_id: str,
        table_id: uuid.UUID,
        fee_bps: int,
        winners: Sequence[uuid.UUID],
        reference: Mapping[str, Any] | None = None,
    ) -> Settlement:
        """Empty the table's escrow: the fee at the snapshotted rate, the rest to the winners.

        ``fee = floor(pool * fee_bps / 10 000)``; the net is split by floor division and
        the remainder goes one centavo each to the first winners in the order given (the
        game service passes seat order).  Zero amounts are not written.  The escrow ends
        at exactly zero.  Its transfers are ``{settlement_id}/fee`` and
        ``{settlement_id}/payout/{position}``.
        """
        reference = dict(reference or {})
        winner_list = list(winners)

        async def work() -> Settlement:
            validate_settlement(settlement_id, fee_bps, winner_list, reference)
            digest = sha256_of(
                {
                    "id": settlement_id,
                    "table_id": str(table_id),
                    "fee_bps": fee_bps,
                    "winners": [str(winner) for winner in winner_list],
                    "reference": reference,
                }
            )
            recorded = await self._settlement_and_digest(settlement_id, replayed=True)
            if recorded is not None:
                if recorded[1] != digest:
                    raise LedgerError(
                        ErrorCode.IDEMPOTENCY_CONFLICT,
                        "The settlement id was already used for a different request.",
                        {"settlement_id": settlement_id},
                    )
                return recorded[0]
            return await self._settle(
                settlement_id,
                table_id=table_id,
                fee_bps=fee_bps,
                winners=winner_list,
                reference=reference,
                digest=digest,
            )

        return await self._guarded(work)

    async def close_escrow(self, table_id: uuid.UUID) -> Account:
        """Close a finished or cancelled table's escrow, which must be empty.

        Idempotent.  A closed escrow takes no more entries; reconciliation checks that
        it stays at zero.
        """
        escrow_id = self.escrow_id(table_id)

        async def work() -> Account:
            await self._create_accounts([(AccountType.TABLE_ESCROW, table_id)])
            escrow = (await self._posting.lock([escrow_id]))[escrow_id]
            if not escrow.closed:
                if escrow.balance_cents != 0:
                    raise LedgerError(
                        ErrorCode.ESCROW_NOT_EMPTY,
                        "A table's escrow must be empty (refunded or settled) to close it.",
                        {"account_id": str(escrow_id), "balance_cents": escrow.balance_cents},
                    )
                await self._session.execute(
                    update(ACCOUNTS)
                    .where(ACCOUNTS.c.id == escrow_id)
                    .values(closed_at=func.now(), closed_version=ACCOUNTS.c.version)
                )
            return await self.account(escrow_id)

        return await self._guarded(work)

    # -- internals ------------------------------------------------------------------------

    async def _settle(
        self,
        settlement_id: str,
        *,
        table_id: uuid.UUID,
        fee_bps: int,
        winners: list[uuid.UUID],
        reference: dict[str, Any],
        digest: bytes,
    ) -> Settlement:
        escrow_id = self.escrow_id(table_id)
        house_id = self.system_account_id(AccountType.HOUSE_REVENUE)
        wallet_ids = [self.wallet_id(winner) for winner in winners]
        await self._create_accounts(
            [(AccountType.TABLE_ESCROW, table_id)]
            + [(AccountType.PLAYER_WALLET, winner) for winner in winners]
        )
        # Everything the batch touches is locked now, in id order, before the pool is read.
        locked = await self._posting.lock([escrow_id, house_id, *wallet_ids])
        escrow = locked[escrow_id]
        if escrow.closed:
            raise LedgerError(
                ErrorCode.ACCOUNT_CLOSED,
                "The account is closed.",
                {"account_id": str(escrow_id), "settlement_id": settlement_id},
            )
        pool_cents = escrow.balance_cents
        fee_cents, payouts = split_settlement(pool_cents, fee_bps, len(winners))
        common = {**reference, "table": str(table_id), "settlement": settlement_id}
        requests = []
        if fee_cents > 0:
            requests.append(
                TransferRequest(
                    id=f"{settlement_id}/fee",
                    debit_account_id=escrow_id,
                    credit_account_id=house_id,
                    amount_cents=fee_cents,
                    kind=TransferKind.HOUSE_FEE,
                    reference={**common, "fee_bps": fee_bps},
                )
            )
        for position, (winner, wallet_id, payout) in enumerate(
            zip(winners, wallet_ids, payouts, strict=True)
        ):
            if payout > 0:
                requests.append(
                    TransferRequest(
                        id=f"{settlement_id}/payout/{position}",
                        debit_account_id=escrow_id,
                        credit_account_id=wallet_id,
                        amount_cents=payout,
                        kind=TransferKind.PAYOUT,
                        reference={**common, "winner": str(winner)},
                    )
                )
        created_at = (
            await claim(
                self._session,
                pg_insert(SETTLEMENTS)
                .values(
                    id=settlement_id,
                    table_id=table_id,
                    escrow_account_id=escrow_id,
                    fee_bps=fee_bps,
                    pool_cents=pool_cents,
                    fee_cents=fee_cents,
                    winners=[str(winner) for winner in winners],
                    payouts=payouts,
                    reference=reference,
                    request_sha256=digest,
                )
                .returning(SETTLEMENTS.c.created_at),
            )
        ).scalar_one()
        transfers = await self._posting.post(requests, locked) if requests else []
        assert not any(transfer.replayed for transfer in transfers)
        assert locked[escrow_id].balance_cents == 0
        return Settlement(
            id=settlement_id,
            table_id=table_id,
            escrow_account_id=escrow_id,
            fee_bps=fee_bps,
            pool_cents=pool_cents,
            fee_cents=fee_cents,
            winners=winners,
            payouts_cents=payouts,
            reference=reference,
            transfers=transfers,
            created_at=created_at,
        )

    async def _undo(
        self,
        transfer_id: str,
        original_id: str,
        kind: TransferKind,
        reference_key: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> TransferResult:
        """A transfer moving an original's amount back between its accounts (reversal or
        entry refund); the reference keeps the original's and names it."""

        async def work() -> list[TransferResult]:
            check_transfer_id(transfer_id)
            original = await self._original(original_id)
            if kind == TransferKind.ENTRY_REFUND and original.kind != TransferKind.ENTRY_FEE:
                raise LedgerError(
                    ErrorCode.NOT_AN_ENTRY_FEE,
                    "Only an entry fee can be refunded.",
                    {"transfer_id": transfer_id, "reverses_id": original_id},
                )
            return await self._posting.post(
                [
                    TransferRequest(
                        id=transfer_id,
                        debit_account_id=original.credit_account_id,
                        credit_account_id=original.debit_account_id,
                        amount_cents=original.amount_cents,
                        kind=kind,
                        reference={**original.reference, reference_key: original.id},
                        metadata=dict(metadata or {}),
                        reverses_id=original.id,
                    )
                ]
            )

        # Both accounts exist (the original moved money between them): one transfer,
        # all or nothing, no savepoint needed.
        return (await self._guarded(work, savepoint=False))[0]

    async def _single(
        self, owned: list[tuple[AccountType, uuid.UUID]], request: TransferRequest
    ) -> TransferResult:
        """One transfer whose wallet or escrow may not exist yet."""
        wanted = {self._id_of(account_type, owner_id) for account_type, owner_id in owned}
        existing = set(
            await self._session.scalars(select(ACCOUNTS.c.id).where(id_in(ACCOUNTS.c.id, wanted)))
        )
        if existing == wanted:
            # The hot path: every check happens before the one write statement, which
            # writes all or nothing, so no savepoint is needed.
            return (await self._guarded(lambda: self._posting.post([request]), savepoint=False))[0]

        async def work() -> list[TransferResult]:
            await self._create_accounts(owned)
            return await self._posting.post([request])

        return (await self._guarded(work))[0]

    async def _guarded(self, work: Callable[[], Awaitable[T]], *, savepoint: bool = True) -> T:
        """Run ``work``; a refusal leaves the transaction as it was, a lost race runs it again.

        ``savepoint=False`` only for work that writes nothing before its last check and
        then writes all or nothing in one statement (one transfer on existing accounts).
        """
        for attempt in range(1, MAX_RACE_RETRIES + 1):
            try:
                if savepoint:
                    async with self._session.begin_nested():
                        result = await work()
                else:
                    result = await work()
            except LostRace:
                if attempt == MAX_RACE_RETRIES:
                    raise
                continue
            except LedgerError as error:
                metrics.count_refusal(error.code)
                raise
            _count(self._session, result)
            return result
        raise AssertionError("unreachable")

    def _id_of(self, account_type: AccountType, owner_id: uuid.UUID | None) -> uuid.UUID:
        if owner_id is None:
            return self.system_account_id(account_type)
        if account_type == AccountType.PLAYER_WALLET:
            return self.wallet_id(owner_id)
        return self.escrow_id(owner_id)

    async def _create_accounts(self, owned: Sequence[tuple[AccountType, uuid.UUID | None]]) -> None:
        """Create the missing accounts in ascending id order (the order locks are taken
        in), leaving existing ones untouched."""
        rows = {
            self._id_of(account_type, owner_id): {
                "id": self._id_of(account_type, owner_id),
                "type": str(account_type),
                "currency": self._currency,
                "owner_id": owner_id,
                "may_go_negative": MAY_GO_NEGATIVE[account_type],
            }
            for account_type, owner_id in owned
        }
        await self._session.execute(
            pg_insert(ACCOUNTS).on_conflict_do_nothing(),
            [rows[account_id] for account_id in sorted(rows)],
        )

    async def _original(self, transfer_id: str) -> TransferResult:
        found = await self.find_transfer(transfer_id)
        if found is None:
            raise LedgerError(
                ErrorCode.TRANSFER_NOT_FOUND, "No such transfer.", {"reverses_id": transfer_id}
            )
        return found


def _count(session: AsyncSession, result: object) -> None:
    """Metrics of a successful operation: a replay, or transfers counted on commit."""
    if isinstance(result, Settlement):
        replayed, transfers = result.replayed, result.transfers
    elif isinstance(result, list) and result and isinstance(result[0], TransferResult):
        replayed, transfers = result[0].replayed, result
    else:
        return
    if replayed:
        metrics.count_replay()
    else:
        metrics.count_on_commit(session, transfers)
