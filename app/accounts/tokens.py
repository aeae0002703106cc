"""Revoking a user's live bearer tokens (a password change, a suspension, an operator)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import func, update

from app.accounts.models import AccessToken

if TYPE_CHECKING:
    import uuid

    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ("revoke_live_tokens",)


async def revoke_live_tokens(
    session: AsyncSession, user_id: uuid.UUID, *, keep: uuid.UUID | None = None
) -> int:
    """Revoke every live (unexpired, unrevoked) token of the user but ``keep`` (not
    committed); returns how many were revoked."""
    now = func.now()  # the database's clock, as every expiry check
    live = [
        AccessToken.user_id == user_id,
        AccessToken.revoked_at.is_(None),
        AccessToken.expires_at > now,
    ]
    if keep is not None:
        live.append(AccessToken.id != keep)
    result = await session.execute(update(AccessToken).where(*live).values(revoked_at=now))
    return int(getattr(result, "rowcount", 0) or 0)
