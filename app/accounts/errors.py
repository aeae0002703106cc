"""Refusals the account modules share."""

from __future__ import annotations

from app.errors import NotFoundError

__all__ = ("user_not_found",)


def user_not_found(**named_by: str) -> NotFoundError:
    """404 ``user_not_found``; ``named_by`` is how the caller named the user (``user_id`` or
    ``username``), echoed in the details."""
    return NotFoundError("No such user.", code="user_not_found", details=named_by)
