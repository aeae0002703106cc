"""Tables of the accounts context: users, bearer tokens, failed logins."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    LargeBinary,
    String,
    func,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import GameBase

__all__ = (
    "ENTRY_LIMIT_PERIODS",
    "MAX_ENTRY_LIMIT_CENTS",
    "REMOTE_ADDRESS_MAX_LENGTH",
    "ROLES",
    "SUSPENSION_REASON_MAX_LENGTH",
    "AccessToken",
    "AccountSuspension",
    "EntryLimit",
    "EntryLimitChange",
    "LoginDevice",
    "LoginFailure",
    "User",
)

ROLES = ("player", "compliance", "operator")
"""Every role a user can have; a user has exactly one."""
REMOTE_ADDRESS_MAX_LENGTH = 64
"""Longest client address kept with a failed login (behind a proxy the client writes it)."""
SUSPENSION_REASON_MAX_LENGTH = 500
ENTRY_LIMIT_PERIODS = ("day", "week", "month")
"""The windows a player may cap their entries over (``app.accounts.limits``)."""
MAX_ENTRY_LIMIT_CENTS = 10**12
"""The largest entry limit a player may set (R$ 10 billion: a typo guard)."""


class User(GameBase):
    """A person who uses the service: a paying player, compliance staff or an operator."""

    __tablename__ = "users"
    __table_args__ = (
        CheckConstraint("role IN ('player', 'compliance', 'operator')", name="role"),
        CheckConstraint(
            "suspended_until IS NULL OR suspended_at IS NOT NULL",
            name="suspended_until_while_suspended",
        ),
        Index("ix_users_created_at", "created_at"),
        Index("ix_users_signup_client_key_created_at", "signup_client_key", "created_at"),
        Index("ix_users_suspended", "id", postgresql_where=text("suspended_at IS NOT NULL")),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    username: Mapped[str] = mapped_column(String(32), unique=True)
    """Lower-case login name, unique."""
    password_hash: Mapped[str] = mapped_column(String(256))
    """``scrypt$<log2 n>$<r>$<p>$<salt b64>$<hash b64>``."""
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())
    signup_client_key: Mapped[str | None] = mapped_column(String(REMOTE_ADDRESS_MAX_LENGTH))
    """The client key (``app.accounts.service.client_key``) of a player's own sign-up; none
    for a user an operator or the command line created."""
    suspended_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    """Set while the account is suspended (``app.accounts.suspension``)."""
    suspended_until: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    """When a player's own self-exclusion ends (none for an operator's suspension)."""


class AccountSuspension(GameBase):
    """One suspension or reinstatement of an account, kept for good (insert-only)."""

    __tablename__ = "account_suspensions"
    __table_args__ = (
        CheckConstraint("action IN ('suspend', 'reinstate')", name="action"),
        Index("ix_account_suspensions_user_id_id", "user_id", "id"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"))
    action: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(String(SUSPENSION_REASON_MAX_LENGTH))
    actor_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id"))
    """The operator who did it, or the player excluding themselves; none from the command
    line and when a self-exclusion ended by itself."""
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())
    until: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    """The end of a self-exclusion."""


class EntryLimit(GameBase):
    """A player's entry limit over one period, as it stands: the limit in force and a
    loosening waiting for its cooling-off (``app.accounts.limits``); every change is also a
    kept :class:`EntryLimitChange`."""

    __tablename__ = "entry_limits"
    __table_args__ = (
        CheckConstraint("period IN ('day', 'week', 'month')", name="period"),
        CheckConstraint(
            f"limit_cents IS NULL OR limit_cents BETWEEN 1 AND {MAX_ENTRY_LIMIT_CENTS}",
            name="limit_cents",
        ),
        CheckConstraint(
            f"pending_cents IS NULL OR pending_cents BETWEEN 1 AND {MAX_ENTRY_LIMIT_CENTS}",
            name="pending_cents",
        ),
        CheckConstraint(
            "pending_cents IS NULL OR pending_applies_at IS NOT NULL", name="pending_applies_at"
        ),
    )

    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"), primary_key=True)
    period: Mapped[str] = mapped_column(String(8), primary_key=True)
    limit_cents: Mapped[int | None] = mapped_column(BigInteger)
    """The limit in force (null: none), unless the pending change has applied since."""
    pending_cents: Mapped[int | None] = mapped_column(BigInteger)
    """The limit asked for (null: none) by a loosening waiting for ``pending_applies_at``."""
    pending_applies_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    """When the pending loosening applies (null: nothing pending)."""
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())


class EntryLimitChange(GameBase):
    """One change of an entry limit a player asked for, kept for good (insert-only)."""

    __tablename__ = "entry_limit_changes"
    __table_args__ = (
        CheckConstraint("period IN ('day', 'week', 'month')", name="period"),
        CheckConstraint(
            f"cents IS NULL OR cents BETWEEN 1 AND {MAX_ENTRY_LIMIT_CENTS}", name="cents"
        ),
        CheckConstraint("applies_at >= requested_at", name="applies_after_request"),
        Index("ix_entry_limit_changes_user_id_id", "user_id", "id"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"))
    period: Mapped[str] = mapped_column(String(8))
    cents: Mapped[int | None] = mapped_column(BigInteger)
    """The limit asked for; null removes the limit."""
    requested_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    applies_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    """At once for a tightening, after the cooling-off for a loosening (unless a later change
    replaced it first)."""
    actor_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"))
    """Who asked: the player."""


class AccessToken(GameBase):
    """A bearer token; only its SHA-256 is stored, so a database leak reveals no token."""

    __tablename__ = "access_tokens"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    token_sha256: Mapped[bytes] = mapped_column(LargeBinary(32), unique=True)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class LoginFailure(GameBase):
    """One failed login (recorded when the attempt starts, deleted by a success), counted by
    username, by client address and by both within the throttling window."""

    __tablename__ = "login_failures"
    __table_args__ = (
        Index("ix_login_failures_username_at", "username", "at"),
        Index("ix_login_failures_client_key_at", "client_key", "at"),
        Index(
            "ix_login_failures_device_id_at",
            "device_id",
            "at",
            postgresql_where=text("device_id IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    username: Mapped[str] = mapped_column(String(64))
    at: Mapped[dt.datetime] = mapped_column(
        DateTime(timezone=True), server_default=text("now()")
    )  # the database's clock, which counts the failures (app.accounts.throttling)
    remote_address: Mapped[str | None] = mapped_column(String(REMOTE_ADDRESS_MAX_LENGTH))
    client_key: Mapped[str | None] = mapped_column(String(REMOTE_ADDRESS_MAX_LENGTH))
    """What failures are counted by: the address, or an IPv6 address's /64 network."""
    device_id: Mapped[uuid.UUID | None] = mapped_column()
    """The known device the login came from (``LoginDevice``): then it is counted by that
    device alone."""


class LoginDevice(GameBase):
    """A device a user logged in from (``app.accounts.devices``): only the SHA-256 of its
    token is stored, as for bearer tokens."""

    __tablename__ = "login_devices"
    __table_args__ = (
        Index("ix_login_devices_user_id_created_at", "user_id", "created_at"),
        Index("ix_login_devices_expires_at", "expires_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"))
    token_sha256: Mapped[bytes] = mapped_column(LargeBinary(32), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=func.now())
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
