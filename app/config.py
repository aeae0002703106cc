"""Settings, read once from the environment.

Every setting has a safe development default so that ``raiz serve`` works on a fresh
clone.  Production mode (``RAIZ_ENV=production``) refuses to start while any secret still
has its development value, and refuses test-only switches such as fixed decks.
"""

from __future__ import annotations

import base64
import binascii
import functools
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

__all__ = (
    "DEV_PAYMENT_WEBHOOK_SECRET",
    "DEV_SEED_KEYRING",
    "DEV_SIGNING_KEYRING",
    "PRESENCE_REFRESH_S",
    "ConfigurationError",
    "Settings",
    "get_settings",
)

# Development secrets: public, fixed, and therefore refused in production.
DEV_SEED_KEYRING = "dev1:ZGV2ZWxvcG1lbnQtb25seS1zZWVkLWtleS0zMmJ5dGU="
"""AES-256-GCM keyring (``key_id:base64key,...``) sealing unrevealed seeds in development."""
DEV_SIGNING_KEYRING = "dev1:ZGV2ZWxvcG1lbnQtb25seS1lZDI1NTE5LXNlZWQhISE="
"""Ed25519 private keys (``key_id:base64seed,...``) signing round records in development."""
DEV_PAYMENT_WEBHOOK_SECRET = "development-only-webhook-secret"  # noqa: S105
"""HMAC-SHA256 secret shared with the payment provider in development."""


class ConfigurationError(RuntimeError):
    """The settings are unusable; the service refuses to start."""


def _key_material(keyring: str) -> set[bytes]:
    """The decodable keys of a ``key_id:base64,...`` keyring (malformed entries are left to
    the keyring's own parser, which names them)."""
    keys = set()
    for entry in keyring.split(","):
        _, _, encoded = entry.partition(":")
        try:
            keys.add(base64.b64decode(encoded.strip(), validate=True))
        except (binascii.Error, ValueError):
            continue
    return keys


PRESENCE_REFRESH_S = 5.0
"""An open table WebSocket refreshes its player's presence this often (``app.tables.realtime``)."""
MAX_PRODUCTION_AUDIT_INTERVAL_S = 900.0
"""The longest audit sweep interval production accepts: ``RaizAuditSweepStalled`` pages after 30
minutes without a finished sweep, and a sweep itself takes time."""
MIN_WEBHOOK_SECRET_LENGTH = 24
"""The shortest payment webhook secret production accepts (its HMAC-SHA256 key): 24 random
printable characters are well over 128 bits, out of reach of trying keys offline."""
MIN_PRODUCTION_PRESENCE_GRACE_S = 2 * PRESENCE_REFRESH_S
"""The shortest presence grace production accepts: a missed refresh must not count a
connected player as away (a table with a player away freezes, and an abandon deadline is armed)."""

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
"""Values of ``RAIZ_LOG_LEVEL`` (any case)."""


def _database_url_problem(url: str) -> str | None:
    """What makes ``url`` unusable as the service's PostgreSQL URL (never quoting it: it may
    hold a password), or ``None``."""
    expected = "expected postgresql://user:password@host:5432/database"
    try:
        parsed = make_url(url)
        port = parsed.port
    except (ArgumentError, ValueError):
        return f"not a URL; {expected}"
    scheme = parsed.drivername.partition("+")[0]
    if scheme not in ("postgresql", "postgres"):
        return f"the scheme is {scheme!r}, not postgresql; {expected}"
    if port is not None and not 1 <= port <= 65_535:
        return f"port {port} is out of range"
    return None


def _listed(secrets: str) -> tuple[str, ...]:
    """The entries of a comma-separated list of secrets, stripped, empty ones left out."""
    return tuple(entry.strip() for entry in secrets.split(",") if entry.strip())


def _webhook_secret_problem(secret: str) -> str | None:
    """Why production refuses ``secret`` as a webhook secret (never quoting it), or ``None``."""
    if secret.strip() == DEV_PAYMENT_WEBHOOK_SECRET:
        return "still has its development value"
    if not secret.strip():
        return "is empty (anybody could sign events)"
    if "REPLACE_WITH" in secret:
        return "is the placeholder of ops/deploy/raiz.env.example"
    if len(secret.strip()) < MIN_WEBHOOK_SECRET_LENGTH:
        return (
            f"is shorter than {MIN_WEBHOOK_SECRET_LENGTH} characters (a short key can be found "
            "by trying keys against one signed event)"
        )
    return None


_DEV_KEYS = _key_material(DEV_SEED_KEYRING) | _key_material(DEV_SIGNING_KEYRING)
"""The development keys' material, public in the repository whatever id they are given."""


class Settings(BaseSettings):
    """All configuration of the service, flat, with the ``RAIZ_`` prefix."""

    model_config = SettingsConfigDict(env_prefix="RAIZ_", extra="ignore", frozen=True)

    env: Literal["development", "test", "production"] = "development"
    """Deployment mode; ``production`` refuses development secrets and test switches."""

    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("DATABASE_URL", "RAIZ_DATABASE_URL")
    )
    """PostgreSQL URL; unset means an embedded PostgreSQL under ``data_dir``."""
    migration_database_url: str | None = None
    """PostgreSQL URL of the schemas' owner, for migrations only (``raiz db upgrade``,
    ``raiz serve``'s auto-migration); unset means ``database_url``.  With it, ``database_url``
    names a login role of the ``raiz_service`` group, which owns nothing (docs/operations.md)."""
    data_dir: Path = Path(".raiz")
    """Local state of the embedded default (the embedded PostgreSQL lives in ``data_dir/pg``)."""
    db_pool_size: int = Field(default=10, ge=1, le=200)
    """Connections kept open per worker process."""
    db_max_overflow: int = Field(default=10, ge=0, le=200)
    """Extra connections a worker may open under bursts."""
    db_pool_timeout_s: float = Field(default=10.0, gt=0)
    """How long a request waits for a pooled connection before failing."""
    db_statement_timeout_ms: int = Field(default=15_000, ge=100)
    """Server-side statement timeout for every connection of the service."""
    auto_migrate: bool = True
    """Apply pending migrations when ``raiz serve`` starts."""

    host: str = "127.0.0.1"
    """Interface the API listens on."""
    port: int = Field(default=8000, ge=1, le=65535)
    """Port the API listens on."""
    workers: int = Field(default=1, ge=1, le=64)
    """API worker processes started by ``raiz serve``."""

    token_ttl_s: int = Field(default=12 * 3600, ge=60)
    """Lifetime of a bearer token."""
    login_max_failures: int = Field(default=5, ge=1)
    """Failed logins for one username from one client address allowed within
    ``login_window_s`` before that address is throttled for that username."""
    login_max_failures_per_account: int = Field(default=50, ge=1)
    """Failed logins for one username from all addresses together allowed within the window
    before the username is throttled everywhere (guessing spread over many addresses)."""
    login_max_failures_per_address: int = Field(default=100, ge=1)
    """Failed logins from one client address for all usernames together allowed within the
    window before the address is throttled (one address trying many accounts).  Higher than
    the others: many players may share an address (a carrier's NAT); a player's success
    clears their own failures from it."""
    login_window_s: int = Field(default=15 * 60, ge=1)
    """Sliding window for counting failed logins."""
    signup_max_per_address: int = Field(default=20, ge=1)
    """Sign-ups from one client address (an IPv6 address's /64) allowed within
    ``signup_window_s``: users are never deleted, and each sign-up costs a password hash."""
    signup_window_s: int = Field(default=3600, ge=1)
    """Sliding window for counting sign-ups per address."""
    password_min_length: int = Field(default=10, ge=8)
    """Shortest password accepted at sign-up."""
    password_cost_log2: int = Field(default=15, ge=10, le=20)
    """scrypt work factor N = 2**cost for new password hashes (stored with each hash)."""

    seed_keyring: str = DEV_SEED_KEYRING
    """AES-256-GCM keys sealing unrevealed seeds: ``key_id:base64key,...``."""
    seed_active_key_id: str | None = None
    """Key id used for new seals; defaults to the first key of the keyring."""
    signing_keyring: str = DEV_SIGNING_KEYRING
    """Ed25519 private keys (32-byte seeds) signing round records: ``key_id:base64,...``."""
    signing_active_key_id: str | None = None
    """Key id used for new signatures; defaults to the first key of the keyring."""
    payment_webhook_secret: str = DEV_PAYMENT_WEBHOOK_SECRET
    """Shared secret of the payment provider's webhook signatures (``app.wallet.webhook``)."""
    payment_webhook_previous_secrets: str = ""
    """Earlier webhook secrets still accepted during a rotation, comma-separated (none by
    default); remove each once the provider signs with the new secret only."""
    payment_webhook_tolerance_s: int = Field(default=300, ge=1, le=3600)
    """A webhook signature's timestamp may be this many seconds away from the server's clock,
    either way (inclusive); beyond it the delivery is refused as ``stale_signature``."""

    max_open_tables_per_player: int = Field(default=10, ge=1, le=1_000)
    """Tables a player may have created that still wait for players (operators are not
    limited): every table opens an escrow account the ledger keeps for good, and fills the
    lobby."""
    max_tables_created_per_hour: int = Field(default=60, ge=1, le=100_000)
    """Tables a player may create within an hour, whatever became of them (operators are not
    limited): creating and cancelling without end would still grow the ledger."""

    limit_cooling_off_s: int = Field(default=86_400, ge=1, le=90 * 86_400)
    """How long a player's loosening of their own entry limit (a higher limit, or none) waits
    before it applies; a tightening applies at once (``app.accounts.limits``)."""

    allow_fixed_decks: bool = False
    """Test-only: lets tests inject fixed deck orders. Refused in production."""
    allow_timer_overrides: bool = False
    """Test-only: lets table creators shorten the preset's timers. Refused in production."""

    run_scheduler: bool = True
    """Run the deadline sweeper in this process (tests of the API alone may turn it off)."""
    scheduler_poll_interval_s: float = Field(default=0.25, gt=0, le=10)
    """How often each worker sweeps the deadline table for due deadlines."""
    deal_delay_s: float = Field(default=2.0, ge=0, le=60)
    """Pause between a round's seed commitment and its deal (window for client seeds);
    production refuses 0."""
    presence_grace_s: float = Field(default=15.0, ge=0)
    """How long a player counts as connected after their last WebSocket or heartbeat."""
    away_after_timeouts: int = Field(default=3, ge=1, le=1_000)
    """A living player whose own timers ran out this many times in a row, with no action of
    theirs in between, is *away*; a table where no connected living player is playing
    freezes (docs/tables.md, presence)."""
    checkpoint_interval_s: float = Field(default=86_400.0, ge=1)
    """How often the scheduler signs a Merkle checkpoint over the finished rounds (daily)."""
    audit_interval_s: float = Field(default=300.0, gt=0)
    """How often the audit sweep reconciles the ledger and re-verifies newly signed rounds."""
    audit_settle_s: float = Field(default=30.0, ge=0)
    """The sweep leaves rounds signed in the last this-many seconds to the next sweep."""
    audit_full_reconcile_s: float = Field(default=86_400.0, ge=0)
    """How often the audit sweep reconciles the whole ledger; the sweeps in between check only
    the entries written since the previous sweep (0: every sweep in full)."""

    log_level: str = "INFO"
    """Root log level."""
    log_json: bool = True
    """Structured JSON logs (one object per line); false gives human-readable lines."""

    @field_validator("database_url", "migration_database_url")
    @classmethod
    def _postgresql_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or not value.strip():
            return None  # set but empty is unset (production then refuses DATABASE_URL)
        problem = _database_url_problem(value)
        if problem is not None:
            variable = (
                "DATABASE_URL"
                if info.field_name == "database_url"
                else "RAIZ_MIGRATION_DATABASE_URL"
            )
            # not a ValueError: pydantic's message would quote the value, password included
            raise ConfigurationError(f"{variable} is unusable: {problem}")
        return value

    @model_validator(mode="after")
    def _migrations_beside_the_database(self) -> Settings:
        if self.migration_database_url is not None and self.database_url is None:
            raise ConfigurationError(
                "RAIZ_MIGRATION_DATABASE_URL is set without DATABASE_URL (the embedded "
                "database has a single role); set both, or neither"
            )
        return self

    @field_validator("log_level")
    @classmethod
    def _known_log_level(cls, value: str) -> str:
        level = value.strip().upper()
        if level not in LOG_LEVELS:
            msg = f"unknown log level; expected one of {', '.join(LOG_LEVELS)}"
            raise ValueError(msg)
        return level

    @model_validator(mode="after")
    def _refuse_unsafe_production(self) -> Settings:
        if self.env != "production":
            return self
        problems = []
        # By key material, not by the setting's text: a development key listed beside a
        # real one, under another id or with other spacing is as public.
        if self.seed_keyring == DEV_SEED_KEYRING:
            problems.append("RAIZ_SEED_KEYRING still has its development value")
        elif _key_material(self.seed_keyring) & _DEV_KEYS:
            problems.append("RAIZ_SEED_KEYRING holds a development key")
        if self.signing_keyring == DEV_SIGNING_KEYRING:
            problems.append("RAIZ_SIGNING_KEYRING still has its development value")
        elif _key_material(self.signing_keyring) & _DEV_KEYS:
            problems.append("RAIZ_SIGNING_KEYRING holds a development key")
        # Every accepted webhook secret signs deposits: a previous one as much as the current.
        current = _webhook_secret_problem(self.payment_webhook_secret)
        if current is not None:
            problems.append(f"RAIZ_PAYMENT_WEBHOOK_SECRET {current}")
        elif "," in self.payment_webhook_secret:
            problems.append(
                "RAIZ_PAYMENT_WEBHOOK_SECRET contains a comma (it could not be listed in "
                "RAIZ_PAYMENT_WEBHOOK_PREVIOUS_SECRETS at the next rotation)"
            )
        for position, previous in enumerate(_listed(self.payment_webhook_previous_secrets), 1):
            problem = _webhook_secret_problem(previous)
            if problem is not None:
                problems.append(f"RAIZ_PAYMENT_WEBHOOK_PREVIOUS_SECRETS entry {position} {problem}")
        if self.allow_fixed_decks:
            problems.append("RAIZ_ALLOW_FIXED_DECKS is a test-only switch")
        if self.allow_timer_overrides:
            problems.append("RAIZ_ALLOW_TIMER_OVERRIDES is a test-only switch")
        if self.deal_delay_s <= 0:
            # Dealing in the commitment's own transaction: nobody sees the commitment before
            # the deal and no client seed can be mixed in (docs/rng.md, section 1).
            problems.append("RAIZ_DEAL_DELAY_S is 0: commitments must be public before the deal")
        if self.database_url is None:
            problems.append("DATABASE_URL is required (no embedded database in production)")
        if self.audit_interval_s > MAX_PRODUCTION_AUDIT_INTERVAL_S:
            problems.append(
                f"RAIZ_AUDIT_INTERVAL_S is {self.audit_interval_s:g}: above "
                f"{MAX_PRODUCTION_AUDIT_INTERVAL_S:g} s, the RaizAuditSweepStalled alert (no "
                "sweep for 30 minutes) would fire between sweeps"
            )
        if self.presence_grace_s < MIN_PRODUCTION_PRESENCE_GRACE_S:
            problems.append(
                f"RAIZ_PRESENCE_GRACE_S is {self.presence_grace_s:g}: below "
                f"{MIN_PRODUCTION_PRESENCE_GRACE_S:g} s (two WebSocket presence refreshes): "
                "players on an open socket would count as away and their tables freeze"
            )
        if problems:
            raise ConfigurationError("refusing to start in production: " + "; ".join(problems))
        return self

    @property
    def payment_webhook_secrets(self) -> tuple[str, ...]:
        """Every webhook secret accepted: the current one, then the previous ones (each
        stripped of surrounding spaces; empty list entries are ignored)."""
        return (
            self.payment_webhook_secret.strip(),
            *_listed(self.payment_webhook_previous_secrets),
        )

    @property
    def embedded_pg_dir(self) -> Path:
        """Data directory of the embedded PostgreSQL."""
        return (self.data_dir / "pg").resolve()


@functools.cache
def get_settings() -> Settings:
    """The process-wide settings, read from the environment on first use."""
    return Settings()
