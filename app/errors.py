"""The error contract of the API: every refused request gets ``{code, message, details}``.

Services raise :class:`AppError` (or a subclass) with a machine-readable ``code``; the
handlers below turn it, and every framework error, into a 4xx JSON body.  A worker whose
database pool stays exhausted past ``RAIZ_DB_POOL_TIMEOUT_S`` answers 503 ``service_busy``
with ``Retry-After`` (nothing was done; the client retries), counted as load shedding, not
as a server error.  Anything else is a bug: it is logged with its request id and answered
with a bare 500.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import structlog
from litestar import MediaType, Request, Response
from litestar.exceptions import (
    HTTPException,
    NotAuthorizedException,
    PermissionDeniedException,
    ValidationException,
)
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

if TYPE_CHECKING:
    from litestar.types import (
        ExceptionHandlersMap,
        Receive,
        Scope,
        Send,
        WebSocketAcceptEvent,
        WebSocketCloseEvent,
    )

__all__ = (
    "AppError",
    "AuthenticationError",
    "ConflictError",
    "ForbiddenError",
    "NotFoundError",
    "RateLimitedError",
    "UnprocessableError",
    "ValidationFailed",
    "error_body",
    "exception_handlers",
    "observed_exception_handlers",
    "was_load_shed",
)

logger = structlog.get_logger("raiz.errors")


class AppError(Exception):
    """A refused request: HTTP status, machine-readable code, human message, details."""

    status_code: ClassVar[int] = 400
    default_code: ClassVar[str] = "bad_request"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: dict[str, Any] | None = None,
        status_code: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.details = details or {}
        self.headers = headers or {}
        if status_code is not None:
            self.status_code = status_code  # type: ignore[misc]


class ValidationFailed(AppError):
    """The request is malformed (400)."""

    status_code = 400
    default_code = "validation_error"


class AuthenticationError(AppError):
    """No valid credentials (401)."""

    status_code = 401
    default_code = "not_authenticated"


class ForbiddenError(AppError):
    """Authenticated but not allowed (403)."""

    status_code = 403
    default_code = "forbidden"


class NotFoundError(AppError):
    """The addressed resource does not exist, or is not visible to the caller (404)."""

    status_code = 404
    default_code = "not_found"


class ConflictError(AppError):
    """The request conflicts with the current state (409)."""

    status_code = 409
    default_code = "conflict"


class UnprocessableError(AppError):
    """Well-formed but refused by a business rule (422)."""

    status_code = 422
    default_code = "unprocessable"


class RateLimitedError(AppError):
    """Too many attempts (429)."""

    status_code = 429
    default_code = "rate_limited"


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON body of every error response."""
    return {"code": code, "message": message, "details": details or {}}


def _respond(
    status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> Response[dict[str, Any]]:
    return Response(content=body, status_code=status, media_type=MediaType.JSON, headers=headers)


def _app_error(_: Request[Any, Any, Any], exc: AppError) -> Response[dict[str, Any]]:
    return _respond(exc.status_code, error_body(exc.code, exc.message, exc.details), exc.headers)


def _validation(_: Request[Any, Any, Any], exc: ValidationException) -> Response[dict[str, Any]]:
    errors = exc.extra if isinstance(exc.extra, list) else []
    return _respond(
        400,
        error_body("validation_error", "The request is not valid.", {"errors": errors}),
    )


_HTTP_CODES = {
    400: "validation_error",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "unprocessable",
    429: "rate_limited",
}


def _http(_: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    status = exc.status_code
    if status >= HTTP_500_INTERNAL_SERVER_ERROR:
        logger.error("http_error", status=status, detail=exc.detail)
        return _respond(status, error_body("internal_error", "Internal server error."))
    code = _HTTP_CODES.get(status, "bad_request")
    if isinstance(exc, NotAuthorizedException):
        code = "not_authenticated"
    elif isinstance(exc, PermissionDeniedException):
        code = "forbidden"
    return _respond(status, error_body(code, exc.detail), exc.headers)


_LOAD_SHED_KEY = "raiz_load_shed"


def was_load_shed(scope: Scope) -> bool:
    """Whether the request of ``scope`` was answered 503 ``service_busy``: refused to shed
    load, which the request metrics count apart from server errors (bugs)."""
    return bool(scope.get("state", {}).get(_LOAD_SHED_KEY, False))


_ON_PURPOSE_KEY = "raiz_5xx_on_purpose"


def answer_5xx_on_purpose(request: Request[Any, Any, Any]) -> None:
    """Mark the request as answered with a 5xx by design, not by a fault of the code (a
    readiness probe saying "not ready"): the request metrics leave it out of the server
    errors, which the 5xx alerts count as bugs."""
    request.scope["state"][_ON_PURPOSE_KEY] = True


def answered_5xx_on_purpose(scope: Scope) -> bool:
    """Whether :func:`answer_5xx_on_purpose` marked the request of ``scope``."""
    return bool(scope.get("state", {}).get(_ON_PURPOSE_KEY, False))


BUSY_RETRY_AFTER_S = 1
"""``Retry-After`` of a 503 ``service_busy``."""


def _busy(request: Request[Any, Any, Any], exc: PoolTimeoutError) -> Response[dict[str, Any]]:
    logger.warning("service_busy", path=request.url.path, reason="database pool exhausted")
    request.scope["state"][_LOAD_SHED_KEY] = True  # deliberate: not a server error
    return _respond(
        503,
        error_body(
            "service_busy",
            "The service is at capacity; nothing was done. Retry shortly.",
            {"retry_after_s": BUSY_RETRY_AFTER_S},
        ),
        {"Retry-After": str(BUSY_RETRY_AFTER_S)},
    )


def _internal(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    logger.exception("unhandled_error", path=request.url.path, error_type=type(exc).__name__)
    return _respond(500, error_body("internal_error", "Internal server error."))


async def send_error_response(scope: Scope, receive: Receive, send: Send, exc: Exception) -> None:
    """Answer ``exc`` the way the exception handlers do, from inside a middleware.

    For errors raised by a middleware before the route runs (authentication): Litestar would
    answer them from its outermost layer, past the other middlewares' ``send`` wrappers, so
    the request id header and the request metrics would miss them.
    """
    request: Request[Any, Any, Any] = Request(scope, receive)
    response = _response_for(request, exc)
    await response.to_asgi_response(app=None, request=request)(scope, receive, send)


async def close_websocket_with_error(
    scope: Scope, receive: Receive, send: Send, exc: Exception
) -> None:
    """Refuse a WebSocket the way the exception handlers answer a request: close code
    ``4000 + status`` (4401 for a missing, unknown, expired or revoked token) and the error's
    code as the reason.

    The socket is accepted first: a close before the handshake is answered by the server
    with a bare HTTP 403 (no code reaches the client), and Litestar's own handling closes
    with 4500, a server error, whatever the cause.
    """
    response = _response_for(Request(scope, receive), exc)
    body = response.content if isinstance(response.content, dict) else {}
    message = await receive()
    if message["type"] != "websocket.connect":  # the client went away
        return
    accept: WebSocketAcceptEvent = {"type": "websocket.accept", "subprotocol": None, "headers": []}
    close: WebSocketCloseEvent = {
        "type": "websocket.close",
        "code": 4000 + (response.status_code or HTTP_500_INTERNAL_SERVER_ERROR),
        "reason": str(body.get("code", "internal_error")),
    }
    await send(accept)
    await send(close)


def _response_for(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    handlers = exception_handlers()
    handler = next((handlers[kind] for kind in type(exc).__mro__ if kind in handlers), _internal)
    return handler(request, exc)


def exception_handlers() -> ExceptionHandlersMap:
    """Handlers for :class:`AppError`, framework errors and unexpected exceptions."""
    return {
        AppError: _app_error,
        ValidationException: _validation,
        HTTPException: _http,
        PoolTimeoutError: _busy,
        Exception: _internal,
    }


def observed_exception_handlers(
    observe: Callable[[Request[Any, Any, Any], Response[Any]], None],
) -> ExceptionHandlersMap:
    """:func:`exception_handlers`, each calling ``observe(request, response)`` with its answer:
    for a route (its own ``exception_handlers``) that counts its refusals by the code the
    client gets, whatever raised them (a ``before_request`` hook, the body's decoding, the
    handler)."""

    def observed(
        handler: Callable[[Request[Any, Any, Any], Any], Response[Any]],
    ) -> Callable[[Request[Any, Any, Any], Any], Response[Any]]:
        def answer(request: Request[Any, Any, Any], exc: Any) -> Response[Any]:
            response = handler(request, exc)
            observe(request, response)
            return response

        return answer

    return {kind: observed(handler) for kind, handler in exception_handlers().items()}
