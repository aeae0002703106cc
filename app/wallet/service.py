"""Wallet use cases of the API on one request session; each write commits or refuses."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from app.accounts.service import AccountService
from app.wallet.errors import app_error
from app.wallet.schemas import (
    AccountRead,
    MoneyMovementCreate,
    PaymentEvent,
    PaymentEventResult,
    StatementRead,
    TransferRead,
    WalletRead,
)
from ledger import AccountType, Ledger, LedgerError, TransferResult

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings

__all__ = ("OPERATOR_TRANSFER_PREFIX", "PAYMENT_TRANSFER_PREFIX", "WalletService")

OPERATOR_TRANSFER_PREFIX = "op:"
"""Transfer id of an operator deposit or withdrawal: ``op:<Idempotency-Key>``."""
PAYMENT_TRANSFER_PREFIX = "payment:"
"""Transfer id of a provider's event: ``payment:<event_id>``."""


class WalletService:
    """Balances, statements and money in/out through the ledger."""

    def __init__(self, session: AsyncSession, settings: Settings) -> None:
        self._session = session
        self._settings = settings
        self._ledger = Ledger(session)

    # -- reads ------------------------------------------------------------------------------

    async def wallet(self, user_id: uuid.UUID) -> WalletRead:
        """A user's balance; a user who never had money has a zero balance and no account."""
        account = await self._ledger.find_account(self._ledger.wallet_id(user_id))
        return WalletRead(
            user_id=user_id,
            account_id=account.id if account else None,
            currency=account.currency if account else "BRL",
            balance_cents=account.balance_cents if account else 0,
            version=account.version if account else 0,
        )

    async def wallet_statement(
        self, user_id: uuid.UUID, *, limit: int, before_version: int | None
    ) -> StatementRead:
        """A page of a user's own wallet entries, newest first."""
        wallet_id = self._ledger.wallet_id(user_id)
        if await self._ledger.find_account(wallet_id) is None:
            return StatementRead(
                account_id=None, balance_cents=0, lines=[], next_before_version=None
            )
        return await self.account_statement(wallet_id, limit=limit, before_version=before_version)

    async def accounts(
        self,
        *,
        account_type: AccountType | None,
        owner_id: uuid.UUID | None,
        limit: int,
        offset: int,
    ) -> list[AccountRead]:
        """Accounts by type and id."""
        async with _refusals():
            accounts = await self._ledger.list_accounts(
                account_type=account_type, owner_id=owner_id, limit=limit, offset=offset
            )
        return [AccountRead.of(account) for account in accounts]

    async def account(self, account_id: uuid.UUID) -> AccountRead:
        """One account (404 ``account_not_found``)."""
        async with _refusals():
            return AccountRead.of(await self._ledger.account(account_id))

    async def account_statement(
        self, account_id: uuid.UUID, *, limit: int, before_version: int | None
    ) -> StatementRead:
        """A page of any account's entries, newest first."""
        async with _refusals():
            statement = await self._ledger.statement(
                account_id, limit=limit, before_version=before_version
            )
        return StatementRead.of(statement)

    # -- money in and out ---------------------------------------------------------------------

    async def deposit(
        self,
        operator_id: uuid.UUID,
        user_id: uuid.UUID,
        idempotency_key: str,
        request: MoneyMovementCreate,
    ) -> TransferRead:
        """Credit a user's wallet from the cash-in clearing account."""
        return await self._operator_movement(
            self._ledger.deposit, operator_id, user_id, idempotency_key, request
        )

    async def withdraw(
        self,
        operator_id: uuid.UUID,
        user_id: uuid.UUID,
        idempotency_key: str,
        request: MoneyMovementCreate,
    ) -> TransferRead:
        """Debit a user's wallet to the cash-out clearing account; never beyond the balance."""
        return await self._operator_movement(
            self._ledger.withdraw, operator_id, user_id, idempotency_key, request
        )

    async def _operator_movement(
        self,
        movement: Callable[..., Awaitable[TransferResult]],
        operator_id: uuid.UUID,
        user_id: uuid.UUID,
        idempotency_key: str,
        request: MoneyMovementCreate,
    ) -> TransferRead:
        await AccountService(self._session, self._settings).get_user(user_id)
        metadata = {"operator": str(operator_id)}
        if request.note is not None:
            metadata["note"] = request.note
        async with self._committing():
            result = await movement(
                OPERATOR_TRANSFER_PREFIX + idempotency_key,
                user_id,
                request.amount_cents,
                reference={}
                if request.payment_reference is None
                else {"payment": request.payment_reference},
                metadata=metadata,
            )
        return TransferRead.of(result)

    async def apply_payment_event(self, event: PaymentEvent) -> PaymentEventResult:
        """Apply a (signature-verified) provider event once per event id."""
        await AccountService(self._session, self._settings).get_user(event.user_id)
        async with self._committing():
            result = await self._ledger.deposit(
                PAYMENT_TRANSFER_PREFIX + event.event_id,
                event.user_id,
                event.amount_cents,
                reference={"payment": event.payment_id, "provider_event": event.event_id},
                metadata={"source": "payment_webhook"},
            )
        return PaymentEventResult(
            event_id=event.event_id, transfer=TransferRead.of(result), replayed=result.replayed
        )

    @asynccontextmanager
    async def _committing(self) -> AsyncIterator[None]:
        try:
            yield
        except LedgerError as error:
            await self._session.rollback()
            raise app_error(error) from None
        await self._session.commit()


@asynccontextmanager
async def _refusals() -> AsyncIterator[None]:
    try:
        yield
    except LedgerError as error:
        raise app_error(error) from None
