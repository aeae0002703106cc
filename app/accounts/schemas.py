"""HTTP payloads of the accounts context."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Annotated, Literal

import msgspec

from app.accounts.limits import PeriodLimit
from app.accounts.models import (
    MAX_ENTRY_LIMIT_CENTS,
    SUSPENSION_REASON_MAX_LENGTH,
    AccountSuspension,
    EntryLimitChange,
    User,
)

__all__ = (
    "EntryLimitChangeRead",
    "EntryLimitRead",
    "EntryLimitRequest",
    "EntryLimitsRead",
    "LoginRequest",
    "PasswordChange",
    "PasswordChanged",
    "PendingEntryLimitRead",
    "SelfExclusionRequest",
    "SignupRequest",
    "SuspensionChangeRead",
    "SuspensionRead",
    "SuspensionRequest",
    "TokenRead",
    "UserCreate",
    "UserRead",
)

MAX_SELF_EXCLUSION_DAYS = 3650
"""The longest self-exclusion a player can ask for (ten years)."""

Username = Annotated[
    str,
    msgspec.Meta(
        min_length=3,
        max_length=32,
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{2,31}$",
        description="Letters, digits, '_', '.', '-'; case-insensitive.",
        examples=["ana_paula"],
    ),
]
Password = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
DeviceToken = Annotated[
    str,
    msgspec.Meta(
        max_length=128,
        description=(
            "The device_token a previous login on this device returned: failed password checks "
            "from it are counted apart from everybody else's (strangers guessing the password "
            "do not lock this device out)."
        ),
    ),
]
NewPassword = Annotated[
    str,
    msgspec.Meta(
        min_length=8,
        max_length=128,
        description="At least RAIZ_PASSWORD_MIN_LENGTH characters (10 by default).",
    ),
]


class SignupRequest(msgspec.Struct, forbid_unknown_fields=True):
    """A new player account."""

    username: Username
    password: NewPassword


class LoginRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Credentials exchanged for a bearer token."""

    username: Username
    password: Password
    device_token: DeviceToken | None = None


class PasswordChange(msgspec.Struct, forbid_unknown_fields=True):
    """The caller's current password and the one replacing it."""

    current_password: Password
    new_password: NewPassword
    device_token: DeviceToken | None = None
    """This device's token (as for a login): kept, while every other device is forgotten."""


class PasswordChanged(msgspec.Struct):
    """A changed password: the caller's other tokens no longer work."""

    revoked_tokens: int
    """How many of the caller's other live tokens were revoked."""


class UserCreate(msgspec.Struct, forbid_unknown_fields=True):
    """An account created by an operator, with any role."""

    username: Username
    password: NewPassword
    role: Literal["player", "compliance", "operator"]


class UserRead(msgspec.Struct):
    """A user as the API shows it (never the password hash)."""

    id: uuid.UUID
    username: str
    role: str
    created_at: dt.datetime
    suspended_at: dt.datetime | None = None
    """Set while the account is suspended."""
    suspended_until: dt.datetime | None = None
    """When a player's own self-exclusion ends (null for an operator's suspension)."""

    @classmethod
    def of(cls, user: User) -> UserRead:
        """The public form of ``user``."""
        return cls(
            id=user.id,
            username=user.username,
            role=user.role,
            created_at=user.created_at,
            suspended_at=user.suspended_at,
            suspended_until=user.suspended_until,
        )


class SuspensionRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Why an account is suspended or reinstated (kept with the change for good)."""

    reason: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            max_length=SUSPENSION_REASON_MAX_LENGTH,
            # not only blanks, and no U+0000 (PostgreSQL cannot store it: a 500 from the insert)
            pattern=r"^\s*[^\s\x00][^\x00]*$",
            examples=["chargeback under review, ticket 4411"],
        ),
    ]


class SelfExclusionRequest(msgspec.Struct, forbid_unknown_fields=True):
    """How long the caller excludes themselves from play."""

    days: Annotated[
        int,
        msgspec.Meta(
            ge=1,
            le=MAX_SELF_EXCLUSION_DAYS,
            description="Whole days, 1 to 3,650 (ten years); it cannot be lifted sooner.",
        ),
    ]


class SuspensionRead(msgspec.Struct):
    """One suspension or reinstatement of an account."""

    id: int
    user_id: uuid.UUID
    action: str
    reason: str
    actor_id: uuid.UUID | None
    """The operator who did it, or the player excluding themselves; null from the command line
    and when a self-exclusion ended by itself."""
    at: dt.datetime
    until: dt.datetime | None = None
    """The end of a self-exclusion."""

    @classmethod
    def of(cls, record: AccountSuspension) -> SuspensionRead:
        """The public form of ``record``."""
        return cls(
            id=record.id,
            user_id=record.user_id,
            action=record.action,
            reason=record.reason,
            actor_id=record.actor_id,
            at=record.at,
            until=record.until,
        )


class SuspensionChangeRead(msgspec.Struct):
    """What a suspension or reinstatement did."""

    user: UserRead
    change: SuspensionRead
    revoked_tokens: int = 0
    """Live tokens of the account revoked (a suspension)."""
    released_seats: int = 0
    """Seats at tables that had not started given up, their entries refunded (a suspension)."""


class TokenRead(msgspec.Struct):
    """A bearer token; send it as ``Authorization: Bearer <token>``."""

    token: str
    expires_at: dt.datetime
    user: UserRead
    token_type: str = "bearer"  # noqa: S105 - the token scheme, not a secret
    device_token: str | None = None
    """Keep it on this device and send it with later logins (``LoginRequest.device_token``);
    null when the login presented a live one."""


class EntryLimitRequest(msgspec.Struct, forbid_unknown_fields=True):
    """The entry limit the caller asks for over one period."""

    cents: (
        Annotated[
            int,
            msgspec.Meta(
                ge=1,
                le=MAX_ENTRY_LIMIT_CENTS,
                description="At most this much in entries within the period's rolling window.",
            ),
        ]
        | None
    )
    """Null removes the limit (a loosening: it applies after the cooling-off)."""


class PendingEntryLimitRead(msgspec.Struct):
    """A loosening waiting for its cooling-off."""

    cents: int | None
    """The limit it asks for (null: none)."""
    applies_at: dt.datetime


class EntryLimitRead(msgspec.Struct):
    """One period's entry limit (``day``: 24 h, ``week``: 7 days, ``month``: 30 days, each
    rolling)."""

    period: str
    limit_cents: int | None
    """The limit in force (null: none)."""
    pending: PendingEntryLimitRead | None
    used_cents: int
    """Entries paid within the window and not refunded."""
    remaining_cents: int | None
    """What may still be paid in entries within the window (null: no limit)."""

    @classmethod
    def of(cls, state: PeriodLimit) -> EntryLimitRead:
        """The public form of ``state``."""
        pending = None
        if state.pending and state.applies_at is not None:
            pending = PendingEntryLimitRead(cents=state.pending_cents, applies_at=state.applies_at)
        return cls(
            period=state.period,
            limit_cents=state.limit_cents,
            pending=pending,
            used_cents=state.used_cents,
            remaining_cents=state.remaining_cents,
        )


class EntryLimitChangeRead(msgspec.Struct):
    """One change of an entry limit a player asked for (kept for good)."""

    id: int
    period: str
    cents: int | None
    """The limit asked for (null: none)."""
    requested_at: dt.datetime
    applies_at: dt.datetime
    """At once for a tightening, after the cooling-off for a loosening (unless a later change
    replaced it before)."""
    actor_id: uuid.UUID

    @classmethod
    def of(cls, record: EntryLimitChange) -> EntryLimitChangeRead:
        """The public form of ``record``."""
        return cls(
            id=record.id,
            period=record.period,
            cents=record.cents,
            requested_at=record.requested_at,
            applies_at=record.applies_at,
            actor_id=record.actor_id,
        )


class EntryLimitsRead(msgspec.Struct):
    """A player's entry limits (day, week, month); for staff, every change too."""

    user_id: uuid.UUID
    limits: list[EntryLimitRead]
    changes: list[EntryLimitChangeRead] | None = None
    """Every change the player asked for, oldest first (staff only; null for the player)."""
