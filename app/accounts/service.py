"""Sign-up, login with throttling, bearer tokens (expiring, revocable), user admin."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import functools
import hashlib
import os
import re
import secrets
import uuid
import weakref
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import anyio
import structlog
from sqlalchemy import LargeBinary, any_, bindparam, func, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.exc import IntegrityError

from app.accounts.devices import KnownDevices
from app.accounts.errors import user_not_found
from app.accounts.models import (
    ROLES,
    AccessToken,
    User,
)
from app.accounts.passwords import hash_password, verify_password
from app.accounts.suspension import account_suspended
from app.accounts.throttling import Throttle, client_key
from app.accounts.tokens import revoke_live_tokens
from app.db.base import transaction_clock
from app.db.paging import CreationOrder
from app.errors import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
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
    "live_token_digests",
    "token_digest",
)

T = TypeVar("T")

HASHING_THREADS = max(2, os.cpu_count() or 2)
"""How many scrypt computations a worker runs at once.  Each holds 128 * r * N bytes (32 MiB
at the default cost, 1 GiB at the highest allowed) and a core; without a bound a flood of
logins (unknown usernames included: they cost one scrypt too) would take one thread each of
anyio's 40, and their memory.  Past the bound, logins queue."""

logger = structlog.get_logger("raiz.accounts")

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


# Built once: every request and every view pushed to a socket checks a token.  A token is
# live while it is unrevoked and unexpired (on the database's clock, as it was issued) and its
# account is not suspended.
_LIVE_TOKEN = (
    AccessToken.revoked_at.is_(None),
    AccessToken.expires_at > func.now(),
    User.suspended_at.is_(None),
)
_AUTHENTICATE = (
    select(AccessToken.id, User.id, User.username, User.role)
    .join(User, User.id == AccessToken.user_id)
    .where(AccessToken.token_sha256 == bindparam("digest"), *_LIVE_TOKEN)
)
_DIGESTS = ARRAY(LargeBinary)
_LIVE_DIGESTS = (
    select(AccessToken.token_sha256)
    .join(User, User.id == AccessToken.user_id)
    .where(AccessToken.token_sha256 == any_(bindparam("digests", type_=_DIGESTS)), *_LIVE_TOKEN)
)


async def live_token_digests(session: AsyncSession, digests: Collection[bytes]) -> frozenset[bytes]:
    """Those of ``digests`` (:func:`token_digest`) whose token
    :meth:`AccountService.authenticate` accepts now: many sockets' tokens in one query."""
    if not digests:
        return frozenset()
    rows = await session.scalars(_LIVE_DIGESTS, {"digests": list(digests)})
    return frozenset(rows)


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
    device_token: str | None = None
    """A new device token (``app.accounts.devices``), unless the login presented a live one."""


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
        self._throttle = Throttle(session, settings)
        self._devices = KnownDevices(session)

    def _check_new_password(self, password: str) -> None:
        """``weak_password`` (400) unless ``password`` has an accepted length."""
        if not self._settings.password_min_length <= len(password) <= _PASSWORD_MAX_LENGTH:
            raise ValidationFailed(
                f"Password must be {self._settings.password_min_length} to "
                f"{_PASSWORD_MAX_LENGTH} characters.",
                code="weak_password",
            )

    async def sign_up(self, username: str, password: str, remote_address: str | None) -> User:
        """A player's own sign-up: at most ``signup_max_per_address`` from one client
        (``client_key``) within ``signup_window_s``, else 429 ``signup_throttled``.

        The count is checked before the password is hashed (a refused flood costs no scrypt)
        and again, under an advisory lock on the client key, right before the insert: one
        client's concurrent sign-ups cannot all pass it, and the lock is held for the insert
        only, never while hashing (queued requests would hold database connections).
        """
        client = client_key(remote_address)
        if client is not None:
            await self._throttle.refuse_signups_over_limit(client)
        user = await self._new_user(username, password, "player", client)
        if client is not None:
            await self._throttle.lock_signups(client)
            await self._throttle.refuse_signups_over_limit(client)
        return await self._insert_user(user)

    async def create_user(self, username: str, password: str, role: str = "player") -> User:
        """Create a user; ``username_taken`` (409) if the name exists."""
        return await self._insert_user(await self._new_user(username, password, role, None))

    async def _new_user(
        self, username: str, password: str, role: str, signup_client_key: str | None
    ) -> User:
        """A user checked and with its password hashed, not added to the session yet."""
        name = normalize_username(username)
        if not _USERNAME_RE.match(name):
            raise ValidationFailed(
                "Username must be 3-32 characters: lower-case letters, digits, '_', '.', '-'.",
                code="invalid_username",
            )
        self._check_new_password(password)
        if role not in ROLES:
            raise ValidationFailed(f"Unknown role {role!r}.", code="invalid_role")
        # A taken name is refused before the hash: such a refusal is never counted against a
        # client's sign-ups, so it must cost no scrypt (the insert still catches a race).
        taken = await self._session.scalar(select(User.id).where(User.username == name))
        await self._session.commit()  # no transaction (nor connection) held while hashing
        if taken is not None:
            raise _username_taken(name)
        digest = await _hashing(hash_password, password, self._settings.password_cost_log2)
        return User(
            username=name, password_hash=digest, role=role, signup_client_key=signup_client_key
        )

    async def _insert_user(self, user: User) -> User:
        # the database's clock, which the signup throttle counts by
        user.created_at = await transaction_clock(self._session)
        self._session.add(user)
        try:
            await self._session.commit()
        except IntegrityError:
            await self._session.rollback()
            raise _username_taken(user.username) from None
        return user

    async def login(
        self,
        username: str,
        password: str,
        remote_address: str | None,
        device_token: str | None = None,
    ) -> IssuedToken:
        """Check the password and issue a token; throttled per username and client address.

        Three counts of failed logins within ``login_window_s`` throttle an attempt (429
        ``login_throttled``): this username from this address (``login_max_failures``), this
        username from every address (``login_max_failures_per_account``) and this address for
        every username (``login_max_failures_per_address``; not counted when the address is
        unknown).  An IPv6 address counts as its /64 network (``client_key``).  So a stranger
        guessing at a player's password locks only their own address out of that account, not
        the player, unless the guesses come from many addresses; and from a device the player
        logged in from before (``device_token``, ``app.accounts.devices``) only the failures
        from that device count, so strangers never lock the player's own devices out.

        The attempt is recorded (and committed) as a failure before the password is checked,
        and the counts include it: guesses sent all at once each see the others, so no more
        than ``login_max_failures`` of them are checked.  A success deletes the failures of
        its username from its address only: the player's own mistakes, not a stranger's.
        """
        name = normalize_username(username)
        device = await self._devices.find(name, device_token)
        client = await self._throttle.record_attempt(name, remote_address, device)
        user = await self._session.scalar(select(User).where(User.username == name))
        stored = None if user is None else user.password_hash
        matches = await _hashing(_check_password, password, stored, self._settings)
        if user is None or not matches:
            raise AuthenticationError("Wrong username or password.", code="invalid_credentials")
        # The password may have been changed while it was checked (a player locking out who
        # learnt it): the token is issued only if the hash checked is still the user's, read
        # under a share lock held until the token is committed, so a change either comes
        # first (and this login is refused) or waits and then revokes the new token too.
        # The same lock orders it with a suspension (``app.accounts.suspension``): a token is
        # issued only to an account not suspended, told so only once the password matched.
        current, suspended_at, suspended_until = (
            await self._session.execute(
                select(User.password_hash, User.suspended_at, User.suspended_until)
                .where(User.id == user.id)
                .with_for_update(read=True)
            )
        ).one()
        if current != stored:
            raise AuthenticationError("Wrong username or password.", code="invalid_credentials")
        if suspended_at is not None:
            raise account_suspended(suspended_until)
        await self._throttle.clear_failures(name, client, device=device)
        issued = await self._new_token(user)
        # a device expired or forgotten since it was looked up is not renewed: as a login
        # without one, this login gets a new device
        if device is None or not await self._devices.renew(user.id, device):
            issued = dataclasses.replace(issued, device_token=await self._devices.issue(user.id))
        await self._session.commit()
        return issued

    async def change_password(
        self,
        principal: Principal,
        current_password: str,
        new_password: str,
        remote_address: str | None,
        device_token: str | None = None,
    ) -> int:
        """Replace the caller's password and revoke every other live token of theirs (a
        leaked token or password stops working; the one of this request goes on); returns how
        many tokens were revoked.  Every known device of theirs is forgotten but this one
        (``device_token``, which is also throttled as a login from it is): whoever learnt the
        password may have logged in from one.

        ``weak_password`` (400) for a new password of a refused length, before anything is
        recorded; the current password is checked as a login is (``invalid_credentials``,
        401, counted with the failed logins and throttled with them, ``login_throttled``), so
        a stolen token cannot be turned into the account by guessing.  Both hashes are
        computed with nothing held (no transaction, no lock: a change queued for the hashing
        threads must not stall the player's logins, seats and tables); the user's row is then
        locked for the replacement only, and a password changed meanwhile (another change,
        ``set_password``) is not the one checked: ``invalid_credentials``, as for a wrong one;
        an account suspended meanwhile changes nothing: ``account_suspended`` (403).
        """
        self._check_new_password(new_password)
        device = await self._devices.find(principal.username, device_token)
        client = await self._throttle.record_attempt(principal.username, remote_address, device)
        stored = await self._session.scalar(
            select(User.password_hash).where(User.id == principal.user_id)
        )
        await self._session.commit()  # no transaction (nor connection) held while hashing
        matches = await _hashing(_check_password, current_password, stored, self._settings)
        if stored is None or not matches:
            raise AuthenticationError("Wrong current password.", code="invalid_credentials")
        new_hash = await _hashing(hash_password, new_password, self._settings.password_cost_log2)
        # FOR NO KEY UPDATE: rows referencing the user (tokens, seats, tables) may still be
        # inserted meanwhile; a login's share lock (``login``) waits for it
        user = await self._session.scalar(
            select(User)
            .where(User.id == principal.user_id)
            .with_for_update(key_share=True)
            .execution_options(populate_existing=True)
        )
        if user is None or user.password_hash != stored:
            await self._session.rollback()
            raise AuthenticationError("Wrong current password.", code="invalid_credentials")
        if user.suspended_at is not None:
            # suspended while the hashes were computed (the token was checked before): the
            # password of a taken-over account stays its owner's (``app.accounts.suspension``)
            await self._session.rollback()
            raise account_suspended()
        user.password_hash = new_hash
        count = await revoke_live_tokens(self._session, user.id, keep=principal.token_id)
        await self._throttle.clear_failures(principal.username, client, device=device)
        await self._devices.forget_all(user.id, keep=device)
        await self._session.commit()
        logger.info("password_changed", user_id=str(user.id), revoked_tokens=count)
        return count

    async def set_password(self, username: str, new_password: str) -> int:
        """Give ``username`` a new password without the current one (``raiz users
        set-password``: an operator restoring a player's access after checking who they are
        elsewhere) and revoke every live token of theirs; returns how many were revoked.  Their
        known devices are forgotten (whoever held the account may have logged in from one).
        ``weak_password`` (400), ``user_not_found`` (404)."""
        self._check_new_password(new_password)
        name = normalize_username(username)
        new_hash = await _hashing(hash_password, new_password, self._settings.password_cost_log2)
        # locked for the replacement only (see ``change_password``), never while hashing
        user = await self._session.scalar(
            select(User)
            .where(User.username == name)
            .with_for_update(key_share=True)
            .execution_options(populate_existing=True)
        )
        if user is None:
            raise user_not_found(username=name)
        user.password_hash = new_hash
        count = await revoke_live_tokens(self._session, user.id)
        await self._throttle.clear_failures(name, every=True)
        await self._devices.forget_all(user.id)
        await self._session.commit()
        logger.info("password_set", user_id=str(user.id), revoked_tokens=count)
        return count

    async def _new_token(self, user: User) -> IssuedToken:
        token = secrets.token_urlsafe(_TOKEN_BYTES)
        # the database's clock, as every expiry check: a worker's clock off would hand out
        # tokens already expired, or living longer than token_ttl_s
        expires_at = await transaction_clock(self._session) + dt.timedelta(
            seconds=self._settings.token_ttl_s
        )
        self._session.add(
            AccessToken(token_sha256=token_digest(token), user_id=user.id, expires_at=expires_at)
        )
        return IssuedToken(token=token, expires_at=expires_at, user=user)

    async def authenticate(self, token: str) -> Principal | None:
        """The principal of a valid token (known, unexpired, unrevoked, of an account not
        suspended), else None."""
        row = (await self._session.execute(_AUTHENTICATE, {"digest": token_digest(token)})).first()
        if row is None:
            return None
        token_id, user_id, username, role = row
        return Principal(user_id=user_id, username=username, role=role, token_id=token_id)

    async def revoke_token(self, token_id: uuid.UUID) -> None:
        """Revoke one token (logout)."""
        await self._session.execute(
            update(AccessToken)
            .where(AccessToken.id == token_id, AccessToken.revoked_at.is_(None))
            .values(revoked_at=func.now())
        )
        await self._session.commit()

    async def revoke_all_tokens(self, user_id: uuid.UUID) -> int:
        """Revoke every live token of a user; returns how many were revoked."""
        await self.get_user(user_id)
        count = await revoke_live_tokens(self._session, user_id)
        await self._session.commit()
        return count

    async def forget_old_login_failures(self) -> int:
        """Delete failed logins older than the throttling window and expired devices; returns
        how many failures."""
        await self._devices.forget_expired()
        return await self._throttle.forget_old_failures()

    async def get_user(self, user_id: uuid.UUID) -> User:
        """A user by id; ``user_not_found`` (404) otherwise."""
        user = await self._session.get(User, user_id)
        if user is None:
            raise user_not_found(user_id=str(user_id))
        return user

    async def list_users(
        self,
        *,
        limit: int,
        offset: int = 0,
        after: uuid.UUID | None = None,
        suspended: bool | None = None,
    ) -> list[User]:
        """Users, oldest first; after the user ``after`` in that order when given
        (``user_not_found`` if there is no such user); only the suspended ones (or only the
        others) with ``suspended``."""
        query = select(User).order_by(*OLDEST_FIRST.order_by()).limit(limit).offset(offset)
        if suspended is not None:
            query = query.where(
                User.suspended_at.is_not(None) if suspended else User.suspended_at.is_(None)
            )
        if after is not None:
            missing = NotFoundError(
                "No user with this id to page from.",
                code="user_not_found",
                details={"after": str(after)},
            )
            query = query.where(await OLDEST_FIRST.after_row(self._session, after, missing))
        return list(await self._session.scalars(query))


def _username_taken(username: str) -> ConflictError:
    return ConflictError(
        "That username is taken.", code="username_taken", details={"username": username}
    )


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
