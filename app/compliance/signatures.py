"""Signing finished rounds in the transaction that finishes them, and the key registry.

:func:`sign_round` is called by the table driver right after a round's result is written and
its seed revealed, in the same transaction: a committed round is always a signed round, and
nothing can slip in between.  The active public key is registered in ``game.signing_keys``
on first use; keys are never removed, so every past signature stays verifiable after a
rotation.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import structlog
from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import SQLAlchemyError

from app.compliance.models import RoundSignature, SigningKey
from app.compliance.record import record_hash, round_record
from app.compliance.signing import SIGNATURE_ALGORITHM, Signer, SigningKeyError, round_message

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings
    from app.db import Database
    from app.tables.models import Round, RoundResult, Table
    from rng.service import RngService

__all__ = (
    "check_active_key",
    "check_signing_settings",
    "register_key",
    "sign_round",
    "signer_for",
    "table_fields",
)


logger = structlog.get_logger("raiz.compliance")


@functools.lru_cache(maxsize=8)
def _signer(keyring: str, active_key_id: str | None) -> Signer:
    return Signer.from_keyring(keyring, active_key_id)


def signer_for(settings: Settings) -> Signer:
    """The active signer of the settings' keyring (parsed once per keyring)."""
    return _signer(settings.signing_keyring, settings.signing_active_key_id)


def check_signing_settings(settings: Settings) -> None:
    """Fail fast at start-up on an unusable keyring (``ConfigurationError``)."""
    from app.config import ConfigurationError

    try:
        signer_for(settings)
    except SigningKeyError as error:
        msg = f"RAIZ_SIGNING_KEYRING / RAIZ_SIGNING_ACTIVE_KEY_ID are unusable: {error}"
        raise ConfigurationError(msg) from None


async def register_key(session: AsyncSession, signer: Signer) -> None:
    """Record the signer's public key (once); a key id reused for another key is refused."""
    await session.execute(
        insert(SigningKey)
        .values(
            key_id=signer.key_id,
            algorithm=SIGNATURE_ALGORITHM,
            public_key=signer.public_key,
            created_at=func.now(),
        )
        .on_conflict_do_nothing(index_elements=["key_id"])
    )
    stored = await session.scalar(
        select(SigningKey.public_key).where(SigningKey.key_id == signer.key_id)
    )
    if stored is not None and bytes(stored) != signer.public_key:
        raise RuntimeError(f"signing key id {signer.key_id!r} is registered with another key")


async def check_active_key(database: Database, settings: Settings) -> None:
    """At start-up: a key id already registered with another public key stops the service
    (``ConfigurationError``) instead of failing the last transaction of every round.  The
    key itself is registered when it first signs; a database that does not answer yet is
    left to the readiness probe."""
    from app.config import ConfigurationError

    signer = signer_for(settings)
    try:
        async with database.session() as session:
            stored = await session.scalar(
                select(SigningKey.public_key).where(SigningKey.key_id == signer.key_id)
            )
    except (OSError, SQLAlchemyError) as error:
        logger.warning("signing_key_not_checked", error=type(error).__name__)
        return
    if stored is not None and bytes(stored) != signer.public_key:
        msg = (
            f"RAIZ_SIGNING_ACTIVE_KEY_ID is unusable: signing key id {signer.key_id!r} is "
            "registered with another key (a key id is never re-used)"
        )
        raise ConfigurationError(msg)


def table_fields(table: Table) -> dict[str, Any]:
    """The table's part of a round record."""
    return {
        "id": str(table.id),
        "game": table.game,
        "preset": table.preset,
        "options": table.options,
        "currency": table.currency,
        "entry_cents": table.entry_cents,
        "fee_bps": table.fee_bps,
    }


async def sign_round(  # noqa: PLR0917 - the driver's pieces, in one call site
    session: AsyncSession,
    settings: Settings,
    rng: RngService,
    table: Table,
    round_: Round,
    result: RoundResult,
) -> RoundSignature:
    """Sign the record of a round whose result was just written and seed revealed."""
    public = await rng.public_round(round_.rng_round_id)
    record = round_record(
        table=table_fields(table),
        round_id=str(round_.id),
        number=round_.number,
        start_state_hash=round_.start_state_hash,
        rng_round_id=str(round_.rng_round_id),
        rng_version=round_.rng_version,
        commitment=round_.commitment,
        seed=public.seed,
        client_seeds=public.client_seeds,
        fixed_streams=[stream.label for stream in public.streams if stream.fixed],
        entries=result.entries,
        last_hash=result.last_hash.hex(),
        final_state_hash=result.final_state_hash,
        summary=result.summary,
        ended_at=result.ended_at.isoformat(),
    )
    digest = record_hash(record)
    signer = signer_for(settings)
    await register_key(session, signer)
    signature = RoundSignature(
        round_id=round_.id,
        record=record,
        record_hash=digest,
        key_id=signer.key_id,
        signature=signer.sign(round_message(digest)),
        signed_at=result.ended_at,
    )
    session.add(signature)
    return signature
