"""Suspending and reinstating accounts (operators), self-exclusion (players), and the check
every paid step makes.

A suspended account (fraud, collusion, a player's own request to stop playing) cannot log in
(``403 account_suspended``, told only to whoever knows the password), its tokens stop working
at once (every live one is revoked, and a token is honoured only for an account that is not
suspended) and it cannot take a seat or open a table.  Its seats at tables that have not
started are given up with their entries refunded (``app.tables.suspended``); a match it already
plays goes on without it, its turns played by the timers as for any player who went away, and
what it wins is paid to its wallet.  The wallet stays as it is: deposits still arrive and
operators still pay withdrawals out.

A player's own self-exclusion (:meth:`SuspensionService.self_exclude`) is such a suspension with
an end (``users.suspended_until``): no operator lifts it sooner, and a job lifts it at its end.
No match starts while a suspended account sits at the table (:func:`any_suspended`).

Every suspension, self-exclusion and reinstatement is a row of ``game.account_suspensions``
(who, when, why, until when), which nobody can change or delete.  A suspension locks the
user's row (``FOR NO KEY UPDATE``); seating and opening a table read it under a share lock
first (:func:`require_active`), so a seat is either taken before the suspension commits (and
then given up by it) or refused.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog
from sqlalchemy import func, select

from app.accounts.errors import user_not_found
from app.accounts.models import AccountSuspension, User
from app.accounts.tokens import revoke_live_tokens
from app.db.base import transaction_clock
from app.errors import ConflictError, ForbiddenError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = (
    "SuspensionChange",
    "SuspensionService",
    "account_suspended",
    "any_suspended",
    "require_active",
)

logger = structlog.get_logger("raiz.accounts")


def account_suspended(until: dt.datetime | None = None) -> ForbiddenError:
    """The refusal of anything a suspended account asks for (``until``: the end of a player's
    own self-exclusion)."""
    if until is not None:
        return ForbiddenError(
            f"You excluded yourself from play until {until.isoformat()}.",
            code="account_suspended",
            details={"suspended_until": until.isoformat()},
        )
    return ForbiddenError("This account is suspended; contact support.", code="account_suspended")


async def require_active(session: AsyncSession, user_id: uuid.UUID) -> None:
    """Refuse (``403 account_suspended``) unless the user is not suspended, reading the row
    under a share lock held until the transaction ends: a suspension waits for the caller's
    seat or table to commit, or the caller sees it.  Take it before any table's lock (the
    order every paid step and the suspension share)."""
    suspended_at = await session.scalar(
        select(User.suspended_at).where(User.id == user_id).with_for_update(read=True)
    )
    if suspended_at is not None:
        raise account_suspended()


async def any_suspended(session: AsyncSession, user_ids: Sequence[uuid.UUID]) -> bool:
    """Whether any of the users is suspended, reading every row under a share lock (in id
    order): a suspension committing meanwhile is waited for and seen.  A match must not
    start with a suspended account seated (its seat is being given up); take it with the
    table's lock held (no suspension holds a table's lock while it holds an account's)."""
    rows = await session.scalars(
        select(User.suspended_at)
        .where(User.id.in_(sorted(set(user_ids))))
        .order_by(User.id)
        .with_for_update(read=True)
    )
    return any(suspended_at is not None for suspended_at in rows)


@dataclass(frozen=True, slots=True)
class SuspensionChange:
    """What a suspension or reinstatement did."""

    user: User
    record: AccountSuspension
    revoked_tokens: int = 0


class SuspensionService:
    """Suspensions and reinstatements in one transaction each (the caller's session)."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def _lock_user(self, user_id: uuid.UUID, actor_id: uuid.UUID | None) -> User:
        """The user's row, locked, and the acting operator's: both in id order, so that two
        operators suspending each other wait for one another instead of deadlocking, and
        ``account_suspended`` (403) for an operator suspended meanwhile (its token was checked
        before), who must not act once locked out."""
        # FOR NO KEY UPDATE: tokens, seats and ledger rows referencing the user may still be
        # inserted (key share); a seat's share lock (``require_active``) waits for it
        rows = await self._session.scalars(
            select(User)
            .where(User.id.in_({user_id} if actor_id is None else {user_id, actor_id}))
            .order_by(User.id)
            .with_for_update(key_share=True)
            .execution_options(populate_existing=True)
        )
        locked = {user.id: user for user in rows}
        actor = None if actor_id is None else locked.get(actor_id)
        if actor is not None and actor.suspended_at is not None:
            raise account_suspended()
        user = locked.get(user_id)
        if user is None:
            raise user_not_found(user_id=str(user_id))
        return user

    async def suspend(
        self, user_id: uuid.UUID, reason: str, actor_id: uuid.UUID | None
    ) -> SuspensionChange:
        """Suspend the account and revoke every live token of it; the caller commits.

        ``user_not_found`` (404), ``cannot_suspend_self`` (409: an operator locking
        themselves out), ``already_suspended`` (409; a player's self-exclusion is not: it is
        made the operator's suspension, which does not end by itself), ``account_suspended``
        (403: the acting operator was suspended meanwhile)."""
        if actor_id == user_id:
            raise ConflictError("You cannot suspend your own account.", code="cannot_suspend_self")
        user = await self._lock_user(user_id, actor_id)
        if user.suspended_at is not None and user.suspended_until is None:
            raise ConflictError(
                "The account is already suspended.",
                code="already_suspended",
                details={"suspended_at": user.suspended_at.isoformat()},
            )
        # a player's self-exclusion becomes the operator's suspension: it no longer ends by
        # itself
        now = await transaction_clock(self._session)
        user.suspended_at = user.suspended_at or now
        user.suspended_until = None
        record = self._record(user, "suspend", reason, actor_id, now)
        return await self._revoke_tokens(user, record)

    async def self_exclude(self, user_id: uuid.UUID, days: int) -> SuspensionChange:
        """The player excludes themselves from play for ``days`` days: suspended as by an
        operator, except that no operator can lift it before it ends, and it ends by itself
        (:meth:`end_self_exclusions`); the caller commits.  ``account_suspended`` (403) when
        the account was suspended meanwhile."""
        user = await self._lock_user(user_id, user_id)
        now = await transaction_clock(self._session)
        user.suspended_at = now
        user.suspended_until = now + dt.timedelta(days=days)
        record = self._record(
            user,
            "suspend",
            f"self-exclusion for {days} day{'s' if days != 1 else ''}",
            user_id,
            now,
            until=user.suspended_until,
        )
        return await self._revoke_tokens(user, record)

    async def _revoke_tokens(self, user: User, record: AccountSuspension) -> SuspensionChange:
        count = await revoke_live_tokens(self._session, user.id)
        await self._session.flush()
        logger.info(
            "account_suspended",
            user_id=str(user.id),
            actor_id=_text(record.actor_id),
            until=None if record.until is None else record.until.isoformat(),
            revoked=count,
        )
        return SuspensionChange(user=user, record=record, revoked_tokens=count)

    async def reinstate(
        self, user_id: uuid.UUID, reason: str, actor_id: uuid.UUID | None
    ) -> SuspensionChange:
        """Lift the suspension (the account logs in again; nothing it gave up comes back);
        the caller commits.  ``user_not_found`` (404), ``not_suspended`` (409),
        ``self_exclusion_running`` (409: a player's self-exclusion is not lifted before it ends),
        ``account_suspended`` (403: the acting operator was suspended meanwhile, a locked-out
        operator reinstating itself included)."""
        user = await self._lock_user(user_id, actor_id)
        if user.suspended_at is None:
            raise ConflictError("The account is not suspended.", code="not_suspended")
        now = await transaction_clock(self._session)
        # from the kept record, not the account's row: an operator's suspension over a
        # self-exclusion clears its end there, and suspending then reinstating must not be a
        # way to end a self-exclusion early
        self_excluded_until = await self._session.scalar(
            select(func.max(AccountSuspension.until)).where(
                AccountSuspension.user_id == user.id,
                AccountSuspension.actor_id == user.id,
                AccountSuspension.action == "suspend",
            )
        )
        if self_excluded_until is not None and self_excluded_until > now:
            raise ConflictError(
                "The player excluded themselves from play; it cannot be lifted before it ends.",
                code="self_exclusion_running",
                details={"suspended_until": self_excluded_until.isoformat()},
            )
        return await self._lift(user, reason, actor_id, now)

    async def end_self_exclusions(self) -> int:
        """Lift every self-exclusion that has ended (the scheduler's job, every minute), each
        recorded as a reinstatement by nobody; returns how many.  The rows are locked by the
        statement that finds them: one changed meanwhile (an operator's suspension over it,
        which clears its end) is read again and left when it no longer matches."""
        now = await transaction_clock(self._session)
        ended = await self._session.scalars(
            select(User)
            .where(User.suspended_at.is_not(None), User.suspended_until <= now)
            .order_by(User.id)
            .with_for_update(key_share=True)
            .execution_options(populate_existing=True)
        )
        lifted = [await self._lift(user, "self-exclusion ended", None, now) for user in ended]
        await self._session.commit()
        return len(lifted)

    async def _lift(
        self, user: User, reason: str, actor_id: uuid.UUID | None, now: dt.datetime
    ) -> SuspensionChange:
        user.suspended_at = None
        user.suspended_until = None
        record = self._record(user, "reinstate", reason, actor_id, now)
        await self._session.flush()
        logger.info("account_reinstated", user_id=str(user.id), actor_id=_text(actor_id))
        return SuspensionChange(user=user, record=record)

    async def history(self, user_id: uuid.UUID) -> list[AccountSuspension]:
        """Every suspension and reinstatement of the user, oldest first (``user_not_found``)."""
        if await self._session.get(User, user_id) is None:
            raise user_not_found(user_id=str(user_id))
        rows = await self._session.scalars(
            select(AccountSuspension)
            .where(AccountSuspension.user_id == user_id)
            .order_by(AccountSuspension.id)
        )
        return list(rows)

    async def user_id_of(self, username: str) -> uuid.UUID:
        """The id of ``username`` (the command line names users), ``user_not_found``."""
        from app.accounts.service import normalize_username  # it imports this module

        user_id = await self._session.scalar(
            select(User.id).where(User.username == normalize_username(username))
        )
        if user_id is None:
            raise user_not_found(username=username)
        return user_id

    def _record(
        self,
        user: User,
        action: str,
        reason: str,
        actor_id: uuid.UUID | None,
        now: dt.datetime,
        *,
        until: dt.datetime | None = None,
    ) -> AccountSuspension:
        record = AccountSuspension(
            user_id=user.id, action=action, reason=reason, actor_id=actor_id, at=now, until=until
        )
        self._session.add(record)
        return record


def _text(value: uuid.UUID | None) -> str | None:
    return None if value is None else str(value)
