"""Request id and one structured log line per request."""

from __future__ import annotations

import re
import time
import uuid
from typing import TYPE_CHECKING

import structlog
from litestar.datastructures import MutableScopeHeaders

if TYPE_CHECKING:
    from litestar.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ("REQUEST_ID_HEADER", "RequestContextMiddleware")

REQUEST_ID_HEADER = "x-request-id"
"""Header carrying the request id, accepted from the client when well-formed."""
_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._-]{8,64}$")

logger = structlog.get_logger("raiz.http")


class RequestContextMiddleware:
    """Binds a request id to every log line of a request and echoes it in the response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        supplied = ""
        for name, value in scope["headers"]:
            if name == REQUEST_ID_HEADER.encode():
                supplied = value.decode("latin-1")
                break
        request_id = supplied if _REQUEST_ID_RE.match(supplied) else uuid.uuid4().hex
        status = {"code": 0}
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                MutableScopeHeaders.from_message(message)[REQUEST_ID_HEADER] = request_id
            await send(message)

        with structlog.contextvars.bound_contextvars(request_id=request_id):
            try:
                await self.app(scope, receive, send_with_id)
            except Exception as exc:
                # Raised by an inner middleware (e.g. authentication); the app-level
                # exception handler answers it with this status.
                status["code"] = getattr(exc, "status_code", 500)
                raise
            finally:
                user = scope.get("user")
                logger.info(
                    "request",
                    method=scope.get("method", "WS"),
                    path=scope["path"],
                    status=status["code"],
                    duration_ms=round((time.perf_counter() - started) * 1000, 2),
                    user_id=str(getattr(user, "user_id", "")) or None,
                )
