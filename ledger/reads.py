"""The read side of the ledger: accounts, balances, statements, recorded transfers."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from ledger._posting import load_results
from ledger.constants import (
    CURRENCIES,
    DEFAULT_CURRENCY,
    MAX_STATEMENT_LIMIT,
    SYSTEM_ACCOUNT_TYPES,
    AccountType,
    account_id_for,
)
from ledger.errors import ErrorCode, LedgerError
from ledger.models import ACCOUNTS, ENTRIES, SETTLEMENTS, TRANSFERS, id_in
from ledger.records import Account, Settlement, Statement, StatementLine, TransferResult

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ("LedgerReads",)


class LedgerReads:
    """Read-only queries on the caller's session (they take no locks)."""

    def __init__(self, session: AsyncSession, *, currency: str = DEFAULT_CURRENCY) -> None:
        if currency not in CURRENCIES:
            raise LedgerError(
                ErrorCode.INVALID_CURRENCY, "Unsupported currency.", {"currency": currency}
            )
        self._session = session
        self._currency = currency

    # -- account ids (pure) -------------------------------------------------------------

    def wallet_id(self, user_id: uuid.UUID) -> uuid.UUID:
        """The id of ``user_id``'s wallet (whether or not it exists yet)."""
        return account_id_for(AccountType.PLAYER_WALLET, self._currency, user_id)

    def escrow_id(self, table_id: uuid.UUID) -> uuid.UUID:
        """The id of ``table_id``'s escrow (whether or not it exists yet)."""
        return account_id_for(AccountType.TABLE_ESCROW, self._currency, table_id)

    def system_account_id(self, account_type: AccountType) -> uuid.UUID:
        """The id of the house revenue, prize fund, cash-in or cash-out account."""
        if account_type not in SYSTEM_ACCOUNT_TYPES:
            raise ValueError(f"{account_type} is not a system account type")
        return account_id_for(account_type, self._currency)

    # -- accounts -------------------------------------------------------------------------

    async def find_account(self, account_id: uuid.UUID) -> Account | None:
        """An account, or None."""
        row = (
            await self._session.execute(select(ACCOUNTS).where(ACCOUNTS.c.id == account_id))
        ).first()
        return None if row is None else account_of(row)

    async def find_accounts(self, account_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Account]:
        """The accounts among ``account_ids`` that exist, by id (one query)."""
        rows = await self._session.execute(
            select(ACCOUNTS).where(id_in(ACCOUNTS.c.id, account_ids))
        )
        return {row.id: account_of(row) for row in rows}

    async def account(self, account_id: uuid.UUID) -> Account:
        """An account; ``account_not_found`` otherwise."""
        found = await self.find_account(account_id)
        if found is None:
            raise LedgerError(
                ErrorCode.ACCOUNT_NOT_FOUND, "No such account.", {"account_id": str(account_id)}
            )
        return found

    async def balance(self, account_id: uuid.UUID) -> int:
        """The balance of an account in centavos; ``account_not_found`` otherwise."""
        return (await self.account(account_id)).balance_cents

    async def list_accounts(
        self,
        *,
        account_type: AccountType | None = None,
        owner_id: uuid.UUID | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Account]:
        """Accounts ordered by type and id, optionally of one type and/or one owner."""
        check_limit(limit)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise LedgerError(ErrorCode.INVALID_LIMIT, "The offset must not be negative.")
        query = (
            select(ACCOUNTS).order_by(ACCOUNTS.c.type, ACCOUNTS.c.id).limit(limit).offset(offset)
        )
        if account_type is not None:
            query = query.where(ACCOUNTS.c.type == str(account_type))
        if owner_id is not None:
            query = query.where(ACCOUNTS.c.owner_id == owner_id)
        return [account_of(row) for row in await self._session.execute(query)]

    async def statement(
        self, account_id: uuid.UUID, *, limit: int = 50, before_version: int | None = None
    ) -> Statement:
        """A page of the account's entries, newest first (keyset on the account version)."""
        check_limit(limit)
        account = await self.account(account_id)
        query = (
            select(
                ENTRIES.c.id,
                ENTRIES.c.transfer_id,
                TRANSFERS.c.kind,
                ENTRIES.c.amount_cents,
                ENTRIES.c.balance_before_cents,
                ENTRIES.c.balance_after_cents,
                ENTRIES.c.account_version,
                TRANSFERS.c.debit_account_id,
                TRANSFERS.c.credit_account_id,
                TRANSFERS.c.reference,
                ENTRIES.c.created_at,
            )
            .join(TRANSFERS, TRANSFERS.c.id == ENTRIES.c.transfer_id)
            # As of the account just read: a transfer committed since then (READ COMMITTED
            # reads it in the next statement) would be a line the page's balance lacks.
            .where(
                ENTRIES.c.account_id == account_id,
                ENTRIES.c.account_version <= account.version,
            )
            .order_by(ENTRIES.c.account_version.desc())
            .limit(limit)
        )
        if before_version is not None:
            query = query.where(ENTRIES.c.account_version < before_version)
        lines = [
            StatementLine(
                entry_id=row.id,
                transfer_id=row.transfer_id,
                kind=row.kind,
                amount_cents=row.amount_cents,
                balance_before_cents=row.balance_before_cents,
                balance_after_cents=row.balance_after_cents,
                account_version=row.account_version,
                counterparty_account_id=(
                    row.credit_account_id
                    if row.debit_account_id == account_id
                    else row.debit_account_id
                ),
                reference=dict(row.reference),
                created_at=row.created_at,
            )
            for row in await self._session.execute(query)
        ]
        more = len(lines) == limit and lines[-1].account_version > 1
        return Statement(
            account=account,
            lines=lines,
            next_before_version=lines[-1].account_version if more else None,
        )

    # -- transfers and settlements -----------------------------------------------------------

    async def find_transfer(self, transfer_id: str) -> TransferResult | None:
        """A recorded transfer with both legs, or None."""
        found = await self._session.scalar(
            select(TRANSFERS.c.id).where(TRANSFERS.c.id == transfer_id)
        )
        if found is None:
            return None
        return (await load_results(self._session, [transfer_id], replayed=False))[0]

    async def transfer(self, transfer_id: str) -> TransferResult:
        """A recorded transfer; ``transfer_not_found`` otherwise."""
        found = await self.find_transfer(transfer_id)
        if found is None:
            raise LedgerError(
                ErrorCode.TRANSFER_NOT_FOUND, "No such transfer.", {"transfer_id": transfer_id}
            )
        return found

    async def transfers(self, transfer_ids: Sequence[str]) -> list[TransferResult]:
        """Recorded transfers in the order of ``transfer_ids`` (one query);
        ``transfer_not_found`` names the first id that does not exist."""
        wanted = list(transfer_ids)
        if not wanted:
            return []
        found = set(
            await self._session.scalars(select(TRANSFERS.c.id).where(id_in(TRANSFERS.c.id, wanted)))
        )
        for transfer_id in wanted:
            if transfer_id not in found:
                raise LedgerError(
                    ErrorCode.TRANSFER_NOT_FOUND, "No such transfer.", {"transfer_id": transfer_id}
                )
        return await load_results(self._session, wanted, replayed=False)

    async def account_transfers(
        self, account_ids: Sequence[uuid.UUID]
    ) -> dict[uuid.UUID, list[TransferResult]]:
        """Every transfer with a leg on each of ``account_ids``, oldest first (two queries,
        however many accounts: what reads a batch of tables' escrows)."""
        rows = (
            await self._session.execute(
                select(ENTRIES.c.account_id, ENTRIES.c.transfer_id)
                .where(id_in(ENTRIES.c.account_id, account_ids))
                .order_by(ENTRIES.c.account_id, ENTRIES.c.account_version)
            )
        ).all()
        wanted = list(dict.fromkeys(row.transfer_id for row in rows))
        loaded = await load_results(self._session, wanted, replayed=False) if wanted else []
        by_id = {transfer.id: transfer for transfer in loaded}
        history: dict[uuid.UUID, list[TransferResult]] = {account: [] for account in account_ids}
        for row in rows:
            history[row.account_id].append(by_id[row.transfer_id])
        return history

    async def find_settlement(self, settlement_id: str) -> Settlement | None:
        """A recorded settlement with its transfers, or None."""
        recorded = await self._settlement_and_digest(settlement_id, replayed=False)
        return None if recorded is None else recorded[0]

    async def find_settlements(self, settlement_ids: Sequence[str]) -> dict[str, Settlement]:
        """The recorded settlements among ``settlement_ids``, with their transfers, by id (two
        queries)."""
        rows = (
            await self._session.execute(
                select(SETTLEMENTS).where(id_in(SETTLEMENTS.c.id, settlement_ids))
            )
        ).all()
        ids = {row.id: _settlement_transfer_ids(row) for row in rows}
        wanted = [transfer_id for row_ids in ids.values() for transfer_id in row_ids]
        loaded = await load_results(self._session, wanted, replayed=False) if wanted else []
        by_id = {transfer.id: transfer for transfer in loaded}
        return {
            row.id: _settlement_of(row, [by_id[i] for i in ids[row.id]], replayed=False)
            for row in rows
        }

    async def _settlement_and_digest(
        self, settlement_id: str, *, replayed: bool
    ) -> tuple[Settlement, bytes] | None:
        row = (
            await self._session.execute(
                select(SETTLEMENTS).where(SETTLEMENTS.c.id == settlement_id)
            )
        ).first()
        if row is None:
            return None
        transfers = await load_results(
            self._session, _settlement_transfer_ids(row), replayed=replayed
        )
        return _settlement_of(row, transfers, replayed=replayed), bytes(row.request_sha256)


def _settlement_transfer_ids(row: Any) -> list[str]:
    """The ids of a settlement's transfers: its fee (if any), then each non-zero payout."""
    return ([f"{row.id}/fee"] if row.fee_cents > 0 else []) + [
        f"{row.id}/payout/{position}" for position, payout in enumerate(row.payouts) if payout > 0
    ]


def _settlement_of(row: Any, transfers: list[TransferResult], *, replayed: bool) -> Settlement:
    """The value object of a ``settlements`` row and its transfers."""
    return Settlement(
        id=row.id,
        table_id=row.table_id,
        escrow_account_id=row.escrow_account_id,
        fee_bps=row.fee_bps,
        pool_cents=row.pool_cents,
        fee_cents=row.fee_cents,
        winners=[uuid.UUID(winner) for winner in row.winners],
        payouts_cents=list(row.payouts),
        reference=dict(row.reference),
        transfers=transfers,
        created_at=row.created_at,
        replayed=replayed,
    )


def check_limit(limit: int) -> None:
    """Refuse a page size outside 1..``MAX_STATEMENT_LIMIT``."""
    if (
        isinstance(limit, bool)
        or not isinstance(limit, int)
        or not 1 <= limit <= MAX_STATEMENT_LIMIT
    ):
        raise LedgerError(
            ErrorCode.INVALID_LIMIT,
            f"The page size must be within 1..{MAX_STATEMENT_LIMIT}.",
            {"max_limit": MAX_STATEMENT_LIMIT},
        )


def account_of(row: Any) -> Account:
    """The value object of an ``accounts`` row."""
    return Account(
        id=row.id,
        type=row.type,
        currency=row.currency,
        owner_id=row.owner_id,
        may_go_negative=row.may_go_negative,
        balance_cents=row.balance_cents,
        version=row.version,
        created_at=row.created_at,
        closed_at=row.closed_at,
        closed_version=row.closed_version,
    )
