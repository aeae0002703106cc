"""Known devices: a player keeps logging in from their own devices while strangers guess.

The per-account and per-address limits of the login throttle (``app.accounts.throttling``)
can be filled by a stranger guessing from many addresses, which would lock the player out
too.  So every successful login that did not present one is answered with a *device token*
(``TokenRead.device_token``, to be kept by the client and sent with its later logins); a
login presenting a live device token of its username is counted by that device alone
(``login_max_failures`` failures in the window), not by the limits strangers share.  A device
token opens nothing by itself: the password is still checked.  Only its SHA-256 is stored.

A device lives ``DEVICE_TTL`` from its last successful login (each renews it: a player who
logs in daily keeps the device); a user keeps at most ``MAX_DEVICES_PER_USER`` (a client that
never keeps its token would otherwise add one per login: the least recently used go first);
an operator setting a new password (``raiz users set-password``, an account taken back)
forgets them all.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import uuid
from typing import TYPE_CHECKING, Final

from sqlalchemy import delete, func, select, text, update

from app.accounts.models import LoginDevice, User
from app.db.base import transaction_clock

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ("DEVICE_TOKEN_MAX_LENGTH", "DEVICE_TTL", "MAX_DEVICES_PER_USER", "KnownDevices")

DEVICE_TTL: Final = dt.timedelta(days=180)
MAX_DEVICES_PER_USER: Final = 20
DEVICE_TOKEN_MAX_LENGTH: Final = 128
_DEVICE_TOKEN_BYTES: Final = 32
DEVICES_LOCK_SPACE: Final = 0x72617A64
"""First key of the two-key ``pg_advisory_xact_lock`` serializing one user's new devices
("razd"; the second key is a hash of the user id)."""


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class KnownDevices:
    """The known devices on one database session (the account service's)."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def find(self, username: str, token: str | None) -> uuid.UUID | None:
        """The id of the live device ``token`` names for ``username`` (normalized), else
        None: an unknown, expired or forgotten token, or another user's, counts as none."""
        if not token:
            return None
        return await self._session.scalar(
            select(LoginDevice.id)
            .join(User, User.id == LoginDevice.user_id)
            .where(
                LoginDevice.token_sha256 == _digest(token),
                LoginDevice.expires_at > func.now(),
                User.username == username,
            )
        )

    async def issue(self, user_id: uuid.UUID) -> str:
        """A new device token of the user (not committed); beyond ``MAX_DEVICES_PER_USER``
        the least recently used are forgotten.  The user's new devices are serialized until
        the transaction ends: concurrent logins would each trim what they see, none seeing the
        others' new device, and keep one more each (the login holds only a share lock on the
        user)."""
        await self._lock(user_id)
        token = secrets.token_urlsafe(_DEVICE_TOKEN_BYTES)
        now = await transaction_clock(self._session)
        self._session.add(
            LoginDevice(
                user_id=user_id,
                token_sha256=_digest(token),
                created_at=now,
                expires_at=now + DEVICE_TTL,
            )
        )
        await self._session.flush()
        kept = (
            select(LoginDevice.id)
            .where(LoginDevice.user_id == user_id)
            .order_by(LoginDevice.expires_at.desc(), LoginDevice.id.desc())
            .limit(MAX_DEVICES_PER_USER)
        )
        await self._session.execute(
            delete(LoginDevice).where(
                LoginDevice.user_id == user_id, LoginDevice.id.not_in(kept.scalar_subquery())
            )
        )
        return token

    async def _lock(self, user_id: uuid.UUID) -> None:
        """Serialize the user's new devices and renewals until the transaction ends."""
        await self._session.execute(
            text("SELECT pg_advisory_xact_lock(:space, hashtext(:user))"),
            {"space": DEVICES_LOCK_SPACE, "user": str(user_id)},
        )

    async def renew(self, user_id: uuid.UUID, device_id: uuid.UUID) -> bool:
        """The device logged in again: it lives ``DEVICE_TTL`` from now (not committed).
        False, changing nothing, when it was forgotten or expired since :meth:`find` (the
        password check between them takes a while): a forgotten device stays forgotten, and
        an expired one is not brought back (its token counts as none).  It takes the lock
        :meth:`issue` takes: a new device's trim (least recently used first) either comes
        first, and then this device may be gone, or sees it renewed."""
        await self._lock(user_id)
        now = func.now()
        result = await self._session.execute(
            update(LoginDevice)
            .where(LoginDevice.id == device_id, LoginDevice.expires_at > now)
            .values(expires_at=now + DEVICE_TTL)
        )
        return bool(getattr(result, "rowcount", 0))

    async def forget_all(self, user_id: uuid.UUID, *, keep: uuid.UUID | None = None) -> None:
        """Forget every device of the user but ``keep`` (not committed)."""
        condition = LoginDevice.user_id == user_id
        if keep is not None:
            condition = condition & (LoginDevice.id != keep)
        await self._session.execute(delete(LoginDevice).where(condition))

    async def forget_expired(self) -> int:
        """Delete expired devices (run with the login failures' clean-up); returns how many."""
        result = await self._session.execute(
            delete(LoginDevice).where(LoginDevice.expires_at <= func.now())
        )
        await self._session.commit()
        return int(getattr(result, "rowcount", 0) or 0)
