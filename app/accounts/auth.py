"""Bearer-token authentication middleware and role guards."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from litestar.enums import ScopeType
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult

from app.accounts.service import AccountService, Principal
from app.errors import close_websocket_with_error, send_error_response

if TYPE_CHECKING:
    from collections.abc import Callable

    from litestar.connection import ASGIConnection
    from litestar.handlers.base import BaseRouteHandler
    from litestar.types import Receive, Scope, Send

    from app.db import Database

__all__ = ("BearerAuthMiddleware", "principal_of", "requires_role")

PUBLIC_OPT_KEY = "exclude_from_auth"
"""Route option that makes a handler public (no token needed)."""


def _bearer_token(connection: ASGIConnection[Any, Any, Any, Any]) -> str | None:
    header = connection.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    if connection.scope["type"] == "websocket":
        # Browsers cannot set headers on a WebSocket; the token comes in the query string.
        token = connection.query_params.get("token")
        if token:
            return str(token)
    return None


class _AuthenticationFailed(Exception):
    """Carries an error of :meth:`BearerAuthMiddleware.authenticate_request` out of it."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class BearerAuthMiddleware(AbstractAuthenticationMiddleware):
    """Resolves ``Authorization: Bearer <token>`` to a :class:`Principal`.

    A refusal (401, or 503 when the database pool is exhausted) is answered here, inside
    the request-id and Prometheus middlewares, so both see it; a WebSocket is closed with
    ``4000 + status`` (4401, 4503) and the error's code as the reason.
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except _AuthenticationFailed as failed:
            if scope["type"] == ScopeType.WEBSOCKET:
                await close_websocket_with_error(scope, receive, send, failed.error)
                return
            if scope["type"] != ScopeType.HTTP:
                raise failed.error from None
            await send_error_response(scope, receive, send, failed.error)

    async def authenticate_request(
        self, connection: ASGIConnection[Any, Any, Any, Any]
    ) -> AuthenticationResult:
        try:
            return await self._authenticate(connection)
        except Exception as error:
            raise _AuthenticationFailed(error) from error

    async def _authenticate(
        self, connection: ASGIConnection[Any, Any, Any, Any]
    ) -> AuthenticationResult:
        token = _bearer_token(connection)
        if token is None:
            raise NotAuthorizedException("A bearer token is required.")
        database: Database = connection.app.state.database
        settings = connection.app.state.settings
        async with database.session() as session:
            principal = await AccountService(session, settings).authenticate(token)
        if principal is None:
            raise NotAuthorizedException("The token is unknown, expired or revoked.")
        return AuthenticationResult(user=principal, auth=token)


def principal_of(connection: ASGIConnection[Any, Any, Any, Any]) -> Principal:
    """The authenticated caller of ``connection``."""
    user = connection.scope.get("user")
    if not isinstance(user, Principal):
        raise NotAuthorizedException("A bearer token is required.")
    return user


def requires_role(
    *roles: str,
) -> Callable[[ASGIConnection[Any, Any, Any, Any], BaseRouteHandler], None]:
    """A guard admitting only callers whose role is one of ``roles``."""
    allowed = frozenset(roles)

    def guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
        principal = principal_of(connection)
        if principal.role not in allowed:
            raise PermissionDeniedException(
                f"This action needs the role {' or '.join(sorted(allowed))}."
            )

    guard.__name__ = f"requires_{'_or_'.join(sorted(allowed))}"
    return guard
