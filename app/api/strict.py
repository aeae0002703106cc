"""Strict request bodies for money: a JSON integer stays the only way to say an amount."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from litestar import Request

from app.errors import ValidationFailed

__all__ = ("strict_body",)

T = TypeVar("T")


async def strict_body(request: Request[Any, Any, Any], body_type: type[T]) -> T:
    """The body decoded strictly: Litestar's own conversion is lenient (it turns ``"100"`` and
    ``100.0`` into ``100``), and a money amount must be a JSON integer."""
    try:
        return msgspec.json.decode(await request.body(), type=body_type)
    except msgspec.ValidationError as error:
        raise ValidationFailed(
            "The request is not valid.",
            details={"errors": [{"message": str(error), "source": "body"}]},
        ) from None
