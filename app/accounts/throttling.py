"""Throttling of password checks and sign-ups, counted per client and per username.

A *client* is what ``client_key`` makes of the request's address: an IPv4 address, an IPv6
address's /64 network (a subscriber is given a whole /64 and could otherwise take a new
address for every guess), anything else as written.  Behind the deploy's nginx the address is
the peer's (docs/operations.md).

Failed password checks (logins and password changes) are recorded in ``game.login_failures``
before the password is checked and counted within ``login_window_s``; sign-ups are counted
from ``game.users.signup_client_key`` within ``signup_window_s``.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import uuid
from typing import TYPE_CHECKING, Final

from sqlalchemy import delete, func, or_, select, text

from app.accounts.models import REMOTE_ADDRESS_MAX_LENGTH, LoginFailure, User
from app.errors import RateLimitedError

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings

__all__ = ("Throttle", "client_key")

SIGNUP_LOCK_SPACE: Final = 0x72617A73
"""First key of the two-key ``pg_advisory_xact_lock`` serializing one client's sign-ups
("razs"; the second key is a hash of the client key)."""


def client_key(remote_address: str | None) -> str | None:
    """What requests from ``remote_address`` are counted by: an IPv4 address; an IPv6
    address's /64 network; anything else as written (cut to the stored length)."""
    if remote_address is None:
        return None
    remote_address = remote_address[:REMOTE_ADDRESS_MAX_LENGTH]
    try:
        address = ipaddress.ip_address(remote_address)
        if isinstance(address, ipaddress.IPv6Address):
            if address.ipv4_mapped is not None:
                return str(address.ipv4_mapped)
            return str(ipaddress.IPv6Network((address, 64), strict=False))
    except ValueError:
        return remote_address
    return str(address)


def _same_client(client: str | None) -> ColumnElement[bool]:
    """Failed logins from ``client`` (from no known address when it is None)."""
    if client is None:
        return LoginFailure.client_key.is_(None)
    return LoginFailure.client_key == client


class Throttle:
    """The throttling counts on one database session (the account service's)."""

    def __init__(self, session: AsyncSession, settings: Settings) -> None:
        self._session = session
        self._settings = settings

    async def record_attempt(
        self, name: str, remote_address: str | None, device: uuid.UUID | None = None
    ) -> str | None:
        """Record a password check of ``name`` as a failure (committed) and return its client
        key; ``login_throttled`` (429, nothing recorded) when a count is over its limit.

        Three counts within ``login_window_s``, the attempt included: this username from
        this client (``login_max_failures``), this username from every client
        (``login_max_failures_per_account``) and this client for every username
        (``login_max_failures_per_address``; not counted when the address is unknown).  So a
        stranger guessing at a player's password locks only their own client out of that
        account, not the player, unless the guesses come from many clients.  Guesses sent all
        at once each see the others, so no more than ``login_max_failures`` are checked.

        From a known ``device`` of the user (``app.accounts.devices``) one count only: this
        username from this device (``login_max_failures``), so the player's own devices keep
        logging in while strangers fill the others.
        """
        if remote_address is not None:
            # from X-Forwarded-For behind a proxy: whatever the client wrote
            remote_address = remote_address[:REMOTE_ADDRESS_MAX_LENGTH]
        client = client_key(remote_address)
        attempt = LoginFailure(
            username=name, remote_address=remote_address, client_key=client, device_id=device
        )
        self._session.add(attempt)
        await self._session.commit()
        if device is not None:
            over = await self._device_over_limit(name, device)
        else:
            over = await self._over_limit(name, client)
        if over:
            # a refused attempt is not a failure: it changes nothing
            await self._session.execute(delete(LoginFailure).where(LoginFailure.id == attempt.id))
            await self._session.commit()
            raise RateLimitedError(
                "Too many failed logins; try again later.",
                code="login_throttled",
                details={"retry_after_s": self._settings.login_window_s},
                headers={"Retry-After": str(self._settings.login_window_s)},
            )
        return client

    async def _over_limit(self, name: str, client: str | None) -> bool:
        window_start = func.now() - dt.timedelta(seconds=self._settings.login_window_s)
        same_name = LoginFailure.username == name
        same_client = _same_client(client)
        counted = same_name if client is None else or_(same_name, same_client)
        pair, account, address = (
            await self._session.execute(
                select(
                    func.count().filter(same_name, same_client),
                    func.count().filter(same_name),
                    func.count().filter(same_client),
                ).where(LoginFailure.at > window_start, counted)
            )
        ).one()
        settings = self._settings
        return (
            pair > settings.login_max_failures
            or account > settings.login_max_failures_per_account
            or (client is not None and address > settings.login_max_failures_per_address)
        )

    async def _device_over_limit(self, name: str, device: uuid.UUID) -> bool:
        window_start = func.now() - dt.timedelta(seconds=self._settings.login_window_s)
        failures = await self._session.scalar(
            select(func.count()).where(
                LoginFailure.device_id == device,
                LoginFailure.username == name,
                LoginFailure.at > window_start,
            )
        )
        return (failures or 0) > self._settings.login_max_failures

    async def clear_failures(
        self,
        name: str,
        client: str | None = None,
        *,
        device: uuid.UUID | None = None,
        every: bool = False,
    ) -> None:
        """Delete the failures of ``name`` from ``client`` or from ``device`` (a success: the
        player's own mistakes, not a stranger's), or from everywhere with ``every``; not
        committed."""
        condition = LoginFailure.username == name
        if device is not None:
            condition = condition & (LoginFailure.device_id == device)
        elif not every:
            condition = condition & _same_client(client) & LoginFailure.device_id.is_(None)
        await self._session.execute(delete(LoginFailure).where(condition))

    async def forget_old_failures(self) -> int:
        """Delete failed logins older than the window (they no longer count; a username that
        is never logged into would otherwise keep them for good); returns how many.  Run
        periodically by every worker."""
        window_start = func.now() - dt.timedelta(seconds=self._settings.login_window_s)
        result = await self._session.execute(
            delete(LoginFailure).where(LoginFailure.at <= window_start)
        )
        await self._session.commit()
        return int(getattr(result, "rowcount", 0) or 0)

    async def refuse_signups_over_limit(self, client: str) -> None:
        """``signup_throttled`` (429, the session rolled back) when ``client`` signed up
        ``signup_max_per_address`` players within ``signup_window_s``."""
        window_start = func.now() - dt.timedelta(seconds=self._settings.signup_window_s)
        recent = await self._session.scalar(
            select(func.count())
            .select_from(User)
            .where(User.signup_client_key == client, User.created_at > window_start)
        )
        if (recent or 0) >= self._settings.signup_max_per_address:
            await self._session.rollback()
            raise RateLimitedError(
                "Too many accounts were created from your address; try again later.",
                code="signup_throttled",
                details={"retry_after_s": self._settings.signup_window_s},
                headers={"Retry-After": str(self._settings.signup_window_s)},
            )

    async def lock_signups(self, client: str) -> None:
        """Serialize ``client``'s sign-ups until this transaction ends (the count, then the
        insert): concurrent sign-ups cannot all pass the count."""
        await self._session.execute(
            text("SELECT pg_advisory_xact_lock(:space, hashtext(:client))"),
            {"space": SIGNUP_LOCK_SPACE, "client": client},
        )
