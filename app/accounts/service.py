"""Sign-up, login with throttling, bearer tokens (expiring, revocable), user admin."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import hashlib
import os
import re
import secrets
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import anyio
from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError

from app.accounts.models import (
    REMOTE_ADDRESS_MAX_LENGTH,
    ROLES,
    AccessToken,
    LoginFailure,
    User,
)
from app.accounts.passwords import hash_password, verify_password
from app.db.base import utcnow
from app.db.paging import CreationOrder
from app.errors import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
    RateLimitedError,
    ValidationFailed,
)

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings

__all__ = (
    "HASHING_THREADS",
    "USERNAME_PATTERN",
    "AccountService",
    "IssuedToken",
    "Principal",
    "token_digest",
)

T = TypeVar("T")

HASHING_THREADS = max(2, os.cpu_count() or 2)
"""How many scrypt computations a worker runs at once.  Each holds 128 * r * N bytes (32 MiB
at the default cost, 1 GiB at the highest allowed) and a core; without a bound a flood of
logins (unknown usernames included: they cost one scrypt too) would take one thread each of
anyio's 40, and their memory.  Past the bound, logins queue."""

_hashing_limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter]
_hashing_limiters = weakref.WeakKeyDictionary()


async def _hashing(work: Callable[..., T], *args: object) -> T:
    """Run ``work(*args)`` (scrypt) in a worker thread, at most :data:`HASHING_THREADS` at once
    on this event loop."""
    loop = asyncio.get_running_loop()
    limiter = _hashing_limiters.get(loop)
    if limiter is None:
        limiter = _hashing_limiters[loop] = anyio.CapacityLimiter(HASHING_THREADS)
    return await anyio.to_thread.run_sync(work, *args, limiter=limiter)


USERNAME_PATTERN = r"^[a-z0-9_][a-z0-9_.-]{2,31}$"
"""Lower-case letters, digits, ``_ . -``; 3 to 32 characters."""
_USERNAME_RE = re.compile(USERNAME_PATTERN)
_PASSWORD_MAX_LENGTH = 128
_TOKEN_BYTES = 32
OLDEST_FIRST = CreationOrder(User.created_at, User.id, newest_first=False)
"""The order of user listings: earliest created first, ties by id."""


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller of a request."""

    user_id: uuid.UUID
    username: str
    role: str
    token_id: uuid.UUID | None = None
    """The bearer token that authenticated the request (None for internal callers)."""


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """A freshly issued bearer token; the clear token exists only in this object."""

    token: str
    expires_at: dt.datetime
    user: User


def token_digest(token: str) -> bytes:
    """SHA-256 of a bearer token, the form in which tokens are stored and looked up."""
    return hashlib.sha256(token.encode("utf-8")).digest()


def normalize_username(username: str) -> str:
    """The canonical (lower-case, trimmed) form of a login name."""
    return username.strip().lower()


class AccountService:
    """Accounts operations on one database session; each public method commits."""

    def __init__(self, session: AsyncSession, settings: Settings) -> None:
        self._session = session
        self._settings = settings

    async def create_user(self, username: str, password: str, role: str = "player") -> User:
        """Create a user; ``username_taken`` (409) if the name exists."""
        name = normalize_username(username)
        if not _USERNAME_RE.match(name):
            raise ValidationFailed(
                "Username must be 3-32 characters: lower-case letters, digits, '_', '.', '-'.",
                code="invalid_username",
            )
        if not self._settings.password_min_length <= len(password) <= _PASSWORD_MAX_LENGTH:
            raise ValidationFailed(
                f"Password must be {self._settings.password_min_length} to "
                f"{_PASSWORD_MAX_LENGTH} characters.",
                code="weak_password",
            )
        if role not in ROLES:
            raise ValidationFailed(f"Unknown role {role!r}.", code="invalid_role")
        digest = await _hashing(hash_password, password, self._settings.password_cost_log2)
        user = User(username=name, password_hash=digest, role=role)
        self._session.add(user)
        try:
            await self._session.commit()
        except IntegrityError:
            await self._session.rollback()
            raise ConflictError(
                "That username is taken.", code="username_taken", details={"username": name}
            ) from None
        return user

    async def login(self, username: str, password: str, remote_address: str | None) -> IssuedToken:
        """Check the password and issue a token; throttled per username.

        The attempt is recorded (and committed) as a failure before the password is checked,
        and the count includes it: guesses sent all at once each see the others, so no more
        than ``login_max_failures`` of them are checked. A success deletes the failures.
        """
        name = normalize_username(username)
        if remote_address is not None:
            # from X-Forwarded-For behind a proxy: whatever the client wrote
            remote_address = remote_address[:REMOTE_ADDRESS_MAX_LENGTH]
        attempt = LoginFailure(username=name, remote_address=remote_address)
        self._session.add(attempt)
        await self._session.commit()
        window_start = utcnow() - dt.timedelta(seconds=self._settings.login_window_s)
        failures = await self._session.scalar(
            select(func.count())
            .select_from(LoginFailure)
            .where(LoginFailure.username == name, LoginFailure.at > window_start)
        )
        if (failures or 0) > self._settings.login_max_failures:
            # a refused attempt is not a failure: it changes nothing
            await self._session.execute(delete(LoginFailure).where(LoginFailure.id == attempt.id))
            await self._session.commit()
            raise RateLimitedError(
                "Too many failed logins; try again later.",
                code="login_throttled",
                details={"retry_after_s": self._settings.login_window_s},
                headers={"Retry-After": str(self._settings.login_window_s)},
            )
        user = await self._session.scalar(select(User).where(User.username == name))
        stored = None if user is None else user.password_hash
        matches = await _hashing(_check_password, password, stored, self._settings)
        if user is None or not matches:
            raise AuthenticationError("Wrong username or password.", code="invalid_credentials")
        await self._session.execute(delete(LoginFailure).where(LoginFailure.username == name))
        issued = self._new_token(user)
        await self._session.commit()
        return issued

    def _new_token(self, user: User) -> IssuedToken:
        token = secrets.token_urlsafe(_TOKEN_BYTES)
        expires_at = utcnow() + dt.timedelta(seconds=self._settings.token_ttl_s)
        self._session.add(
            AccessToken(token_sha256=token_digest(token), user_id=user.id, expires_at=expires_at)
        )
        return IssuedToken(token=token, expires_at=expires_at, user=user)

    async def authenticate(self, token: str) -> Principal | None:
        """The principal of a valid (known, unexpired, unrevoked) token, else None."""
        row = (
            await self._session.execute(
                select(AccessToken.id, User.id, User.username, User.role)
                .join(User, User.id == AccessToken.user_id)
                .where(
                    AccessToken.token_sha256 == token_digest(token),
                    AccessToken.revoked_at.is_(None),
                    AccessToken.expires_at > utcnow(),
                )
            )
        ).first()
        if row is None:
            return None
        token_id, user_id, username, role = row
        return Principal(user_id=user_id, username=username, role=role, token_id=token_id)

    async def revoke_token(self, token_id: uuid.UUID) -> None:
        """Revoke one token (logout)."""
        await self._session.execute(
            update(AccessToken)
            .where(AccessToken.id == token_id, AccessToken.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )
        await self._session.commit()

    async def revoke_all_tokens(self, user_id: uuid.UUID) -> int:
        """Revoke every live token of a user; returns how many were revoked."""
        await self.get_user(user_id)
        result = await self._session.execute(
            update(AccessToken)
            .where(
                AccessToken.user_id == user_id,
                AccessToken.revoked_at.is_(None),
                AccessToken.expires_at > utcnow(),
            )
            .values(revoked_at=utcnow())
        )
        await self._session.commit()
        return int(getattr(result, "rowcount", 0) or 0)

    async def forget_old_login_failures(self) -> int:
        """Delete failed logins older than the throttling window (they no longer count; a
        username that is never logged into would otherwise keep them for good); returns how
        many.  Run periodically by every worker."""
        window_start = utcnow() - dt.timedelta(seconds=self._settings.login_window_s)
        result = await self._session.execute(
            delete(LoginFailure).where(LoginFailure.at <= window_start)
        )
        await self._session.commit()
        return int(getattr(result, "rowcount", 0) or 0)

    async def get_user(self, user_id: uuid.UUID) -> User:
        """A user by id; ``user_not_found`` (404) otherwise."""
        user = await self._session.get(User, user_id)
        if user is None:
            raise NotFoundError("No such user.", code="user_not_found")
        return user

    async def list_users(
        self, *, limit: int, offset: int = 0, after: uuid.UUID | None = None
    ) -> list[User]:
        """Users, oldest first; after the user ``after`` in that order when given
        (``user_not_found`` if there is no such user)."""
        query = select(User).order_by(*OLDEST_FIRST.order_by()).limit(limit).offset(offset)
        if after is not None:
            created_at = await self._session.scalar(select(User.created_at).where(User.id == after))
            if created_at is None:
                raise NotFoundError(
                    "No user with this id to page from.",
                    code="user_not_found",
                    details={"after": str(after)},
                )
            query = query.where(OLDEST_FIRST.after(created_at, after))
        return list(await self._session.scalars(query))


def _check_password(password: str, stored: str | None, settings: Settings) -> bool:
    """``verify_password`` against ``stored``, or against a dummy hash when the username is
    unknown (in the hashing thread: the dummy's first computation must not block the loop)."""
    if stored is None:
        verify_password(password, _unknown_user_hash(settings.password_cost_log2))
        return False
    return verify_password(password, stored)


@functools.cache
def _unknown_user_hash(cost_log2: int) -> str:
    """A valid hash of a random password, checked when the username is unknown so that
    a login for a missing user costs as much time as one for an existing user."""
    return hash_password(secrets.token_urlsafe(16), cost_log2)
