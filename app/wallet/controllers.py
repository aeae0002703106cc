"""HTTP routes of the wallet: players' balance and statement, operators' money in and out,
account inspection, and the payment provider's webhook."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, FromQuery, HeaderParameter, JSONBody, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from app.accounts.auth import PUBLIC_OPT_KEY, principal_of, requires_role
from app.api.deps import AppSettings, DbSession
from app.api.openapi import ErrorBody
from app.api.strict import strict_body
from app.compliance.access import audit_compliance_read
from app.config import Settings
from app.errors import observed_exception_handlers
from app.wallet.metrics import count_delivery
from app.wallet.schemas import (
    IDEMPOTENCY_KEY_PATTERN,
    AccountRead,
    MoneyMovementCreate,
    PaymentEvent,
    PaymentEventResult,
    StatementRead,
    TransferRead,
    WalletRead,
)
from app.wallet.service import WalletService
from app.wallet.webhook import SIGNATURE_HEADER, MatchedSecret, StaleSignature, verify_signature
from ledger import AccountType
from ledger.constants import MAX_STATEMENT_LIMIT

__all__ = (
    "AdminAccountsController",
    "AdminWalletsController",
    "PaymentWebhookController",
    "WalletController",
)

Limit = Annotated[int, QueryParameter(ge=1, le=MAX_STATEMENT_LIMIT, description="Page size.")]
BeforeVersion = Annotated[
    int | None,
    QueryParameter(
        ge=1,
        le=2**62,
        description="Only entries older than this account version (keyset pagination).",
    ),
]
IdempotencyKey = Annotated[
    str,
    HeaderParameter(
        name="Idempotency-Key",
        min_length=1,
        max_length=100,
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description=(
            "Required. Retrying with the same key and body answers 200 with the original "
            "transfer and moves nothing; the same key with another body answers 409."
        ),
    ),
]
_REPLAYED = {
    HTTP_200_OK: ResponseSpec(
        data_container=TransferRead,
        description="Replay: the original transfer of an earlier request with this key",
        generate_examples=False,
    )
}


class WalletController(Controller):
    """The caller's own wallet."""

    path = "/wallet"
    tags = ["wallet"]

    @get("/", operation_id="getWallet")
    async def wallet(
        self, request: Request[Any, Any, Any], db_session: DbSession, settings: AppSettings
    ) -> WalletRead:
        """The caller's balance in centavos."""
        return await WalletService(db_session, settings).wallet(principal_of(request).user_id)

    @get("/statement", operation_id="getWalletStatement")
    async def statement(
        self,
        request: Request[Any, Any, Any],
        db_session: DbSession,
        settings: AppSettings,
        limit: Limit = 50,
        before_version: BeforeVersion = None,
    ) -> StatementRead:
        """The caller's entries, newest first, each with its reference and balance after."""
        return await WalletService(db_session, settings).wallet_statement(
            principal_of(request).user_id, limit=limit, before_version=before_version
        )


class AdminWalletsController(Controller):
    """Operators move money in and out of players' wallets."""

    path = "/admin/wallets"
    tags = ["admin", "wallet"]
    guards = [requires_role("operator")]

    @post(
        "/{user_id:uuid}/deposits",
        operation_id="depositToWallet",
        status_code=HTTP_201_CREATED,
        responses=_REPLAYED,
    )
    async def deposit(
        self,
        *,
        request: Request[Any, Any, Any],
        user_id: FromPath[uuid.UUID],
        data: JSONBody[MoneyMovementCreate],
        idempotency_key: IdempotencyKey,
        db_session: DbSession,
        settings: AppSettings,
    ) -> Response[TransferRead]:
        """Credit money received for a player (cash-in clearing → wallet)."""
        del data  # documented for OpenAPI; decoded strictly below
        transfer = await WalletService(db_session, settings).deposit(
            principal_of(request).user_id,
            user_id,
            idempotency_key,
            await strict_body(request, MoneyMovementCreate),
        )
        return _created_or_replayed(transfer)

    @post(
        "/{user_id:uuid}/withdrawals",
        operation_id="withdrawFromWallet",
        status_code=HTTP_201_CREATED,
        responses=_REPLAYED,
    )
    async def withdraw(
        self,
        *,
        request: Request[Any, Any, Any],
        user_id: FromPath[uuid.UUID],
        data: JSONBody[MoneyMovementCreate],
        idempotency_key: IdempotencyKey,
        db_session: DbSession,
        settings: AppSettings,
    ) -> Response[TransferRead]:
        """Pay money out to a player (wallet → cash-out clearing); 422 beyond the balance."""
        del data  # documented for OpenAPI; decoded strictly below
        transfer = await WalletService(db_session, settings).withdraw(
            principal_of(request).user_id,
            user_id,
            idempotency_key,
            await strict_body(request, MoneyMovementCreate),
        )
        return _created_or_replayed(transfer)


class AdminAccountsController(Controller):
    """Operators and compliance staff inspect any ledger account."""

    path = "/admin/accounts"
    tags = ["admin", "wallet"]
    guards = [requires_role("operator", "compliance")]

    @get("/", operation_id="listAccounts")
    async def list_accounts(
        self,
        *,
        request: Request[Any, Any, Any],
        db_session: DbSession,
        settings: AppSettings,
        account_type: Annotated[AccountType | None, QueryParameter(name="type")] = None,
        owner_id: FromQuery[uuid.UUID | None] = None,
        limit: Limit = 100,
        offset: Annotated[int, QueryParameter(ge=0, le=10_000_000)] = 0,
    ) -> list[AccountRead]:
        """Accounts by type and id; filter by type and/or owner (a user or a table)."""
        accounts = await WalletService(db_session, settings).accounts(
            account_type=account_type, owner_id=owner_id, limit=limit, offset=offset
        )
        filters = {
            "type": None if account_type is None else str(account_type),
            "owner_id": None if owner_id is None else str(owner_id),
            "limit": limit,
            "offset": offset,
            "found": len(accounts),
        }
        await audit_compliance_read(
            db_session, principal_of(request), "list_accounts", None, filters
        )
        return accounts

    @get("/{account_id:uuid}", operation_id="getAccount")
    async def account(
        self,
        request: Request[Any, Any, Any],
        account_id: FromPath[uuid.UUID],
        db_session: DbSession,
        settings: AppSettings,
    ) -> AccountRead:
        """One account with its balance and version."""
        account = await WalletService(db_session, settings).account(account_id)
        await audit_compliance_read(
            db_session, principal_of(request), "read_account", str(account_id)
        )
        return account

    @get("/{account_id:uuid}/statement", operation_id="getAccountStatement")
    async def statement(
        self,
        *,
        request: Request[Any, Any, Any],
        account_id: FromPath[uuid.UUID],
        db_session: DbSession,
        settings: AppSettings,
        limit: Limit = 50,
        before_version: BeforeVersion = None,
    ) -> StatementRead:
        """Any account's entries, newest first."""
        statement = await WalletService(db_session, settings).account_statement(
            account_id, limit=limit, before_version=before_version
        )
        await audit_compliance_read(
            db_session,
            principal_of(request),
            "account_statement",
            str(account_id),
            {"limit": limit, "before_version": before_version, "lines": len(statement.lines)},
        )
        return statement


_SIGNED_WITH_KEY = "raiz_webhook_signed_with"
_COUNTED_KEY = "raiz_webhook_counted"


def _count_once(request: Request[Any, Any, Any], outcome: str) -> None:
    """Count the delivery under ``outcome`` unless it was counted already: a delivery credited
    (and committed) whose answer then failed stays counted as credited, not also as an
    ``internal_error``."""
    state = request.scope["state"]
    if state.get(_COUNTED_KEY):
        return
    state[_COUNTED_KEY] = True
    count_delivery(outcome, _matched_secret(request))


def _matched_secret(request: Request[Any, Any, Any]) -> MatchedSecret | None:
    """Which accepted secret signed the delivery (``None`` before or without a match)."""
    secret: MatchedSecret | None = request.scope["state"].get(_SIGNED_WITH_KEY)
    return secret


async def _verify_webhook_signature(request: Request[Any, Any, Any]) -> None:
    """Refuse an unsigned, malformed or stale signature (401) before anything reads the body:
    a stranger's request is refused as such, never told what its body lacks.  Remembers which
    secret matched (a stale signature's too) for the delivery counter."""
    settings: Settings = request.app.state.settings
    try:
        secret = verify_signature(
            settings.payment_webhook_secrets,
            await request.body(),
            request.headers.get(SIGNATURE_HEADER),
            tolerance_s=settings.payment_webhook_tolerance_s,
        )
    except StaleSignature as stale:
        request.scope["state"][_SIGNED_WITH_KEY] = stale.secret
        raise
    request.scope["state"][_SIGNED_WITH_KEY] = secret


def _count_refused_delivery(request: Request[Any, Any, Any], response: Response[Any]) -> None:
    """Count a refused delivery once, by the code its answer carries (``internal_error`` for a
    bug), whatever refused it: the signature, the body, the ledger."""
    body = response.content if isinstance(response.content, dict) else {}
    _count_once(request, str(body.get("code", "internal_error")))


class PaymentWebhookController(Controller):
    """The payment provider notifies money received (signed, idempotent by event id)."""

    path = "/payments"
    tags = ["payments"]
    opt = {PUBLIC_OPT_KEY: True}

    @post(
        "/webhook",
        operation_id="paymentWebhook",
        status_code=HTTP_200_OK,
        before_request=_verify_webhook_signature,
        exception_handlers=observed_exception_handlers(_count_refused_delivery),
        responses={
            401: ResponseSpec(
                data_container=ErrorBody,
                description=(
                    f"{SIGNATURE_HEADER} missing or signing nothing with an accepted secret "
                    "(code invalid_signature), not t=<unix seconds>,sha256=<hex>[,...] "
                    "(malformed_signature), or dated beyond the tolerance of the server's "
                    "clock (stale_signature)"
                ),
                generate_examples=False,
            )
        },
    )
    async def webhook(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[PaymentEvent],
        db_session: DbSession,
        settings: AppSettings,
        signature: Annotated[
            str | None,
            HeaderParameter(
                name=SIGNATURE_HEADER,
                description=(
                    "t=<unix seconds>,sha256=<hex HMAC-SHA256 of t, '.' and the raw body with "
                    "the shared secret>; several sha256= while the provider rotates its secret"
                ),
            ),
        ] = None,
    ) -> PaymentEventResult:
        """Apply a provider event once: 401 without a valid, fresh signature (checked first,
        by ``_verify_webhook_signature``), 400 for a malformed body, 200 with the original
        result when the event id was already applied.  Every delivery is counted once in
        ``raiz_payment_webhook_deliveries_total``: here when it is answered 200 (``credited``
        or ``replayed``, after the commit), by the route's exception handlers when refused."""
        del data, signature  # documented for OpenAPI; verified before, decoded strictly below
        event = await strict_body(request, PaymentEvent)
        result = await WalletService(db_session, settings).apply_payment_event(event)
        _count_once(request, "replayed" if result.replayed else "credited")
        return result


def _created_or_replayed(transfer: TransferRead) -> Response[TransferRead]:
    return Response(transfer, status_code=HTTP_200_OK if transfer.replayed else HTTP_201_CREATED)
