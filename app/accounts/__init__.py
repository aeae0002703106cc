"""Accounts: users, roles, bearer tokens and login throttling."""

from __future__ import annotations

from app.accounts.auth import PUBLIC_OPT_KEY, BearerAuthMiddleware, principal_of, requires_role
from app.accounts.service import AccountService, Principal

__all__ = (
    "PUBLIC_OPT_KEY",
    "AccountService",
    "BearerAuthMiddleware",
    "Principal",
    "principal_of",
    "requires_role",
)
