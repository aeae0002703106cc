"""The request class of the API: a JSON body nested too deeply is malformed, not a crash."""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.exceptions import ClientException

__all__ = ("ApiRequest",)


class ApiRequest(Request[Any, Any, Any]):
    """A :class:`~litestar.Request` whose JSON body never fails with a server error."""

    async def json(self) -> Any:
        """The decoded JSON body; 400 when msgspec gives up on its nesting depth."""
        try:
            return await super().json()
        except RecursionError:
            # msgspec raises RecursionError, not a DecodeError, for e.g. 100,000 nested '['
            raise ClientException("JSON is malformed: nested too deeply.") from None
