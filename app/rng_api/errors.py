"""RNG service refusals as API errors: the same ``code``, an HTTP status per code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from litestar import MediaType, Response

from app.errors import AppError, error_body
from rng.contract import RngErrorCode, RngServiceError

if TYPE_CHECKING:
    from litestar import Request

__all__ = ("STATUS_BY_CODE", "app_error_of", "rng_service_error_handler")

STATUS_BY_CODE: Final[dict[RngErrorCode, int]] = {
    RngErrorCode.ROUND_NOT_FOUND: 404,
    RngErrorCode.ROUND_EXISTS: 409,
    RngErrorCode.ROUND_REVEALED: 409,
    RngErrorCode.CLIENT_SEEDS_CLOSED: 409,
    RngErrorCode.ALREADY_CONTRIBUTED: 409,
    RngErrorCode.TOO_MANY_CLIENT_SEEDS: 422,
    RngErrorCode.CLIENT_SEED_INVALID: 422,
    RngErrorCode.CONTRIBUTOR_INVALID: 422,
    RngErrorCode.LABEL_INVALID: 422,
    RngErrorCode.INVALID_ARGUMENT: 400,
    RngErrorCode.FIXED_DECKS_DISABLED: 403,
    RngErrorCode.FIXED_STREAM_INVALID: 422,
    RngErrorCode.FIXED_STREAM_EXISTS: 409,
    RngErrorCode.STREAM_ALREADY_DRAWN: 409,
}
"""Every code has a 4xx status; a missing entry would fail the unit test, not a request."""


def app_error_of(error: RngServiceError) -> AppError:
    """The API error for a service refusal (code, message and details kept as they are)."""
    return AppError(
        error.message,
        code=error.code.value,
        details=error.details,
        status_code=STATUS_BY_CODE.get(error.code, 400),
    )


def rng_service_error_handler(
    request: Request[Any, Any, Any], exc: RngServiceError
) -> Response[dict[str, Any]]:
    """Exception handler: a refusal escaping a route becomes a 4xx ``{code, message, details}``."""
    error = app_error_of(exc)
    return Response(
        content=error_body(error.code, error.message, error.details),
        status_code=error.status_code,
        media_type=MediaType.JSON,
    )
