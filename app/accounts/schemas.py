"""HTTP payloads of the accounts context."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Annotated, Literal

import msgspec

from app.accounts.models import SUSPENSION_REASON_MAX_LENGTH, AccountSuspension, User

__all__ = (
    "LoginRequest",
    "PasswordChange",
    "PasswordChanged",
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
