"""Request id and one structured log line per request; the HTTP request metrics."""

from __future__ import annotations

import re
import time
import uuid
from typing import TYPE_CHECKING, Any, cast

import structlog
from litestar import Request
from litestar.datastructures import MutableScopeHeaders
from litestar.exceptions import ImproperlyConfiguredException
from litestar.plugins.prometheus import PrometheusConfig, PrometheusMiddleware
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR
from prometheus_client import Counter

from app.errors import answered_5xx_on_purpose, was_load_shed

if TYPE_CHECKING:
    from litestar.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ("REQUEST_ID_HEADER", "HttpMetricsMiddleware", "RequestContextMiddleware")

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


class HttpMetricsMiddleware(PrometheusMiddleware):
    """Litestar's request metrics (``PrometheusConfig(middleware_class=...)``), with load
    shedding told apart from server errors.

    A request refused with 503 ``service_busy`` (the database pool stayed exhausted; nothing
    was done, the client retries) is counted in ``<prefix>_requests_shed_total``, not in
    ``<prefix>_requests_error_total``: the error counter, which the 5xx alerts use, counts
    bugs only; nor is a 5xx a handler gives on purpose (``answer_5xx_on_purpose``: the
    readiness probe's 503 "not ready", which is the probe working).
    ``<prefix>_requests_total`` keeps every answer with its status code.
    Litestar's own ``__call__`` counts every status >= 500 as an error, hence this one.  The
    counters are registered at the first request, so their families are exported before the
    first error.  (Exemplars and excluded HTTP methods are not supported.)
    """

    def __init__(self, app: ASGIApp, config: PrometheusConfig) -> None:
        if config.exemplars is not None or config.excluded_http_methods:
            msg = "HttpMetricsMiddleware supports neither exemplars nor excluded_http_methods"
            raise ImproperlyConfiguredException(msg)
        super().__init__(app, config)

    def requests_shed_count(self, labels: dict[str, str | int | float]) -> Counter:
        """Requests refused to shed load (503 ``service_busy``)."""
        name = f"{self._config.prefix}_requests_shed_total"
        if name not in PrometheusMiddleware._metrics:
            PrometheusMiddleware._metrics[name] = Counter(
                name=name,
                documentation="Requests refused to shed load (503 service_busy)",
                labelnames=[*labels.keys()],
            )
        return cast("Counter", PrometheusMiddleware._metrics[name])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request: Request[Any, Any, Any] = Request(scope, receive)
        labels = {**self._get_default_labels(request), **self._get_extra_labels(request)}
        span: dict[str, float] = {
            "start_time": time.perf_counter(),
            "duration": 0,
            "status_code": 200,
        }
        errors = self.requests_error_count(labels)
        shed = self.requests_shed_count(labels)
        in_progress = self.requests_in_progress(labels).labels(*labels.values())
        in_progress.inc()
        try:
            await self.app(scope, receive, self._get_wrapped_send(send, span))
        finally:
            in_progress.dec()
            labels["status_code"] = int(span["status_code"])
            values = [*labels.values()]
            if was_load_shed(scope):
                shed.labels(*values).inc()
            elif span["status_code"] >= HTTP_500_INTERNAL_SERVER_ERROR and not (
                answered_5xx_on_purpose(scope)
            ):
                errors.labels(*values).inc()
            self.request_count(labels).labels(*values).inc()
            self.request_time(labels).labels(*values).observe(span["duration"])
