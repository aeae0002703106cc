"""OpenAPI: document the one error body every route may answer with, and serve the documents
under a router whose unknown paths answer that body too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
from litestar import MediaType, Response, Router
from litestar.exceptions import NotFoundException
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.datastructures import ResponseSpec
from litestar.routes import HTTPRoute
from litestar.status_codes import HTTP_404_NOT_FOUND

from app.accounts.auth import PUBLIC_OPT_KEY
from app.errors import error_body

if TYPE_CHECKING:
    from litestar import Litestar

__all__ = ("ErrorBody", "document_error_responses", "error_response", "openapi_router")


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
    return error_response(_DESCRIPTIONS[status])


def error_response(description: str) -> ResponseSpec:
    """The error body under ``description``: a refusal a route documents itself (a public
    route's 403, which :func:`document_error_responses` leaves out: it has no role to lack)."""
    return ResponseSpec(data_container=ErrorBody, description=description, generate_examples=False)


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


async def _json_not_found(response: Response[Any]) -> Response[Any]:
    if response.status_code != HTTP_404_NOT_FOUND:
        return response
    return Response(
        error_body("not_found", NotFoundException().detail),
        status_code=HTTP_404_NOT_FOUND,
        media_type=MediaType.JSON,
    )


def openapi_router(path: str) -> Router:
    """The router the OpenAPI plugin serves its documents from (``OpenAPIConfig.openapi_router``).

    The plugin answers an unknown path under it (``/schema/nothing``) from its own handler, with
    an HTML page; this router turns that answer into the API's JSON ``not_found``, as every
    other unknown route gets.
    """
    return Router(
        path,
        route_handlers=[],
        include_in_schema=False,
        dto=None,
        return_dto=None,
        after_request=_json_not_found,
    )
