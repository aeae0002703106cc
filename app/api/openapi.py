"""OpenAPI: document the one error body every route may answer with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.datastructures import ResponseSpec
from litestar.routes import HTTPRoute

from app.accounts.auth import PUBLIC_OPT_KEY

if TYPE_CHECKING:
    from litestar import Litestar

__all__ = ("ErrorBody", "document_error_responses")


class ErrorBody(msgspec.Struct):
    """Body of every refused request."""

    code: str
    """Machine-readable reason, e.g. ``insufficient_funds``."""
    message: str
    """Human-readable explanation."""
    details: dict[str, Any]
    """Structured context (field errors, limits, ids)."""


_DESCRIPTIONS = {
    400: "Malformed request",
    401: "Missing, expired or revoked bearer token",
    403: "The caller's role may not do this",
    404: "Not found",
    409: "Conflicts with the current state",
    422: "Refused by a business rule",
    429: "Too many attempts",
}


def _spec(status: int) -> ResponseSpec:
    return ResponseSpec(
        data_container=ErrorBody, description=_DESCRIPTIONS[status], generate_examples=False
    )


def document_error_responses(app: Litestar) -> None:
    """Attach the error body to every route's OpenAPI responses (before the schema is built)."""
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for handler in route.route_handlers:
            if not isinstance(handler, HTTPRouteHandler) or not handler.include_in_schema:
                continue
            statuses = [400, 401, 404, 409, 422, 429]
            if not handler.opt.get(PUBLIC_OPT_KEY):
                statuses.append(403)
            documented = {status: _spec(status) for status in statuses}
            handler.responses = {**documented, **(handler.responses or {})}
