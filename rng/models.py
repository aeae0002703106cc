"""Tables of the RNG service (schema ``rng``); only :mod:`rng.service` reads or writes them.

Every table is append-only: database triggers (migration ``rng_0001``) refuse UPDATE, DELETE and
TRUNCATE, so a round's history can only grow.

* ``rounds``: one row per round, written once at commitment time. It holds the **sealed** seed
  (key id, nonce, AES-GCM ciphertext), never the plain seed. ``commitment`` is UNIQUE, which is
  the seed uniqueness guarantee (the commitment is a hash of the seed).
* ``client_seeds``: player contributions, at most one per contributor per round.
* ``drawn_streams``: the audit trail of which labelled streams were drawn, when, and whether a
  test-only fixed stream was used. The first row of a round closes its client seeds.
* ``reveals``: the plain seed, written once when the round is revealed.
* ``fixed_streams``: test-only scripted results, keyed by table and round number (they may be
  registered before the round is committed). Production refuses to write or use them.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Final

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = (
    "NAMING_CONVENTION",
    "SCHEMA",
    "ClientSeedRow",
    "DrawnStreamRow",
    "FixedStreamRow",
    "RevealRow",
    "RngBase",
    "RoundRow",
    "utcnow",
)

SCHEMA: Final = "rng"
"""The PostgreSQL schema the RNG service owns."""

NAMING_CONVENTION: Final = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""Constraint names are deterministic so the migration can refer to them (as in ``game``)."""

_MAX_VERSION_LENGTH: Final = 32
_MAX_KEY_ID_LENGTH: Final = 32
_MAX_LABEL_LENGTH: Final = 64
_MAX_CONTRIBUTOR_LENGTH: Final = 64


def utcnow() -> dt.datetime:
    """The current time, timezone-aware, in UTC."""
    return dt.datetime.now(dt.UTC)


class RngBase(DeclarativeBase):
    """Base of every table the RNG service owns (schema ``rng``)."""

    metadata = MetaData(schema=SCHEMA, naming_convention=NAMING_CONVENTION)


class RoundRow(RngBase):
    """A committed round: the sealed seed, its commitment and the algorithm version."""

    __tablename__ = "rounds"
    __table_args__ = (
        UniqueConstraint("table_ref", "round_number"),
        UniqueConstraint("commitment"),
        CheckConstraint("round_number >= 0", name="round_number"),
        CheckConstraint("commitment ~ '^[0-9a-f]{64}$'", name="commitment"),
        CheckConstraint("octet_length(seal_nonce) = 12", name="seal_nonce"),
        CheckConstraint("octet_length(sealed_seed) BETWEEN 32 AND 80", name="sealed_seed"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    """The round's id in the RNG service; the seal's associated data binds to it."""
    table_ref: Mapped[uuid.UUID] = mapped_column()
    """The game table the round belongs to (the game service's id; no foreign key)."""
    round_number: Mapped[int] = mapped_column(Integer)
    """The round's number at its table."""
    version: Mapped[str] = mapped_column(String(_MAX_VERSION_LENGTH))
    """The algorithm version tag, e.g. ``raiz-rng/1``; verification dispatches on it."""
    commitment: Mapped[str] = mapped_column(String(64))
    """Lowercase hex commitment to the seed, public from the start."""
    seal_key_id: Mapped[str] = mapped_column(String(_MAX_KEY_ID_LENGTH))
    """The id of the AES-256-GCM key that sealed the seed."""
    seal_nonce: Mapped[bytes] = mapped_column(LargeBinary)
    """The 12-byte GCM nonce of the seal."""
    sealed_seed: Mapped[bytes] = mapped_column(LargeBinary)
    """The encrypted seed followed by the GCM tag."""
    committed_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    """When the commitment was recorded."""


class ClientSeedRow(RngBase):
    """One player's client seed for a round."""

    __tablename__ = "client_seeds"
    __table_args__ = (
        CheckConstraint("octet_length(client_seed) BETWEEN 1 AND 255", name="client_seed"),
        CheckConstraint("position >= 0", name="position"),
    )

    round_id: Mapped[uuid.UUID] = mapped_column(ForeignKey(RoundRow.id), primary_key=True)
    """The round it is mixed into."""
    contributor: Mapped[str] = mapped_column(String(_MAX_CONTRIBUTOR_LENGTH), primary_key=True)
    """Who contributed it (the game service's choice, e.g. a user id); mixing order key."""
    position: Mapped[int] = mapped_column(SmallInteger)
    """Arrival order (0 for the first); informative only, mixing sorts by contributor."""
    client_seed: Mapped[bytes] = mapped_column(LargeBinary)
    """The contributed bytes."""
    added_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    """When it was recorded."""


class DrawnStreamRow(RngBase):
    """The first time a labelled stream of a round was handed to the game."""

    __tablename__ = "drawn_streams"

    round_id: Mapped[uuid.UUID] = mapped_column(ForeignKey(RoundRow.id), primary_key=True)
    """The round."""
    label: Mapped[str] = mapped_column(String(_MAX_LABEL_LENGTH), primary_key=True)
    """The stream label: ``deal``, ``first_dealer``, ``reshuffle/<k>``, ..."""
    fixed: Mapped[bool] = mapped_column(Boolean)
    """True if a test-only fixed stream was used instead of the seeded one."""
    drawn_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    """When it was first drawn."""


class RevealRow(RngBase):
    """The plain seed of a revealed round (the sealed row is never touched)."""

    __tablename__ = "reveals"
    __table_args__ = (CheckConstraint("octet_length(seed) BETWEEN 16 AND 64", name="seed"),)

    round_id: Mapped[uuid.UUID] = mapped_column(ForeignKey(RoundRow.id), primary_key=True)
    """The round."""
    seed: Mapped[bytes] = mapped_column(LargeBinary)
    """The round seed, public from now on."""
    revealed_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    """When it was revealed."""


class FixedStreamRow(RngBase):
    """Test-only: a scripted result for one stream of one (table, round number)."""

    __tablename__ = "fixed_streams"
    __table_args__ = (
        UniqueConstraint("table_ref", "round_number", "label"),
        CheckConstraint("(permutation IS NULL) <> (draw IS NULL)", name="one_result"),
        CheckConstraint("draw IS NULL OR draw >= 0", name="draw"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    table_ref: Mapped[uuid.UUID] = mapped_column()
    """The game table."""
    round_number: Mapped[int] = mapped_column(Integer)
    """The round number at that table."""
    label: Mapped[str] = mapped_column(String(_MAX_LABEL_LENGTH))
    """The stream it replaces."""
    permutation: Mapped[list[int] | None] = mapped_column(ARRAY(Integer))
    """The scripted order for ``permutation(n)``, or None."""
    draw: Mapped[int | None] = mapped_column(BigInteger)
    """The scripted value for ``randbelow(n)``, or None."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    """When it was registered."""
