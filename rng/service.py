"""The RNG service: per-round seeds, commitments, client seeds, streams and reveals.

The game service is the only caller, through five methods on one database session:

* :meth:`RngService.commit_round` draws a fresh seed, stores it sealed with its commitment and
  returns the commitment, which players can read before any card is dealt;
* :meth:`RngService.add_client_seed` records a player's client seed, until the first draw;
* :meth:`RngService.stream` hands out a labelled stream (``deal``, ``first_dealer``,
  ``reshuffle/<k>``) and records that it was drawn, which closes client seeds;
* :meth:`RngService.reveal` publishes the seed once the round is over;
* :meth:`RngService.public_round` is what anyone may see: never the seed before the reveal
  (:meth:`RngService.public_rounds` reads many rounds at once, for audits).

:meth:`RngService.fix_stream` registers a scripted result for tests; it refuses unless fixed
decks are allowed (never in production). The service never commits: the caller owns the
transaction, so a round's RNG records commit or roll back with the game's own writes. Methods
that change a round lock its row first, so concurrent calls on one round run one at a time.

Refusals raise :class:`RngServiceError` with a machine-readable ``code`` (see
:class:`RngErrorCode`). A seal that does not open or does not match its commitment is not a
refusal but a broken invariant: :class:`rng.sealing.SealingError` propagates. No message, log
line or metric of this module ever contains a seed.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import structlog
from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert

from rng import metrics
from rng.algorithms import get_algorithm
from rng.contract import (
    DrawnStream,
    PublicRound,
    RngErrorCode,
    RngServiceError,
    RoundCommitment,
    associated_data,
    check_contributor,
    check_label,
    check_round_number,
    check_script,
    check_uuid,
    round_not_found,
)
from rng.errors import RngError
from rng.fixed import FixedChance
from rng.models import (
    ClientSeedRow,
    DrawnStreamRow,
    FixedStreamRow,
    RevealRow,
    RoundRow,
)
from rng.sealing import SealedSeed, SealingError
from rng.streams import ALGORITHM_VERSION, derive_stream, new_round_seed

if TYPE_CHECKING:
    import datetime as dt

    from sqlalchemy.ext.asyncio import AsyncSession

    from rng.sealing import SeedSealer
    from rng.streams import Chance

__all__ = ("RngService",)

_COMMIT_ATTEMPTS: Final = 3
"""A repeated 256-bit seed is practically impossible; a few draws make it impossible."""

logger = structlog.get_logger("raiz.rng")


def _fixed_chance(row: FixedStreamRow) -> FixedChance:
    if row.permutation is not None:
        return FixedChance(permutations=[list(row.permutation)])
    assert row.draw is not None
    return FixedChance(draws=[row.draw])


def _mixing_order(rows: Sequence[ClientSeedRow]) -> list[ClientSeedRow]:
    # Contributors are ASCII, so sorting the strings sorts their bytes; no database collation
    # is involved.
    return sorted(rows, key=lambda row: row.contributor)


class RngService:
    """The RNG operations of one database session; methods never commit."""

    __slots__ = ("_allow_fixed", "_sealer", "_session")

    def __init__(self, session: AsyncSession, sealer: SeedSealer, *, allow_fixed: bool) -> None:
        self._session = session
        self._sealer = sealer
        self._allow_fixed = bool(allow_fixed)

    def __repr__(self) -> str:
        return f"RngService(allow_fixed={self._allow_fixed})"

    # --- the round lifecycle --------------------------------------------------------------

    async def commit_round(self, table_ref: uuid.UUID, round_number: int) -> RoundCommitment:
        """Draw and seal a fresh seed for a round; return its public commitment.

        Refuses with ``round_exists`` if the table already has this round number.
        """
        table_ref = check_uuid("table_ref", table_ref)
        round_number = check_round_number(round_number)
        await self._refuse_existing_round(table_ref, round_number)
        algorithm = get_algorithm(ALGORITHM_VERSION)
        for _ in range(_COMMIT_ATTEMPTS):
            round_id = uuid.uuid4()
            seed = new_round_seed(algorithm.version)
            sealed = self._sealer.seal(seed, associated_data(round_id))
            commitment = algorithm.commitment(seed)
            committed_at = await self._clock()
            # DO NOTHING instead of an error keeps the caller's transaction usable: a conflict
            # is either a concurrent commit of the same round or a repeated seed (whose
            # commitment, UNIQUE, would repeat too).
            inserted = await self._session.scalar(
                insert(RoundRow)
                .values(
                    id=round_id,
                    table_ref=table_ref,
                    round_number=round_number,
                    version=algorithm.version,
                    commitment=commitment,
                    seal_key_id=sealed.key_id,
                    seal_nonce=sealed.nonce,
                    sealed_seed=sealed.ciphertext,
                    committed_at=committed_at,
                )
                .on_conflict_do_nothing()
                .returning(RoundRow.id)
            )
            if inserted is not None:
                break
            await self._refuse_existing_round(table_ref, round_number)
        else:  # pragma: no cover - needs three colliding 256-bit seeds in a row
            msg = "could not draw a seed whose commitment is unique"
            raise RuntimeError(msg)
        metrics.ROUNDS_COMMITTED.labels(algorithm.version).inc()
        logger.info(
            "rng_round_committed",
            round_id=str(round_id),
            table_ref=str(table_ref),
            round_number=round_number,
            version=algorithm.version,
            commitment=commitment,
            seal_key_id=sealed.key_id,
        )
        return RoundCommitment(
            id=round_id,
            commitment=commitment,
            version=algorithm.version,
            committed_at=committed_at,
        )

    async def add_client_seed(
        self, round_id: uuid.UUID, contributor: str, client_seed: bytes
    ) -> None:
        """Record ``contributor``'s client seed for the round, before its first draw.

        Client seeds are mixed in ascending order of contributor (ASCII), whatever their
        arrival order. Refusals: ``client_seed_invalid``, ``contributor_invalid``,
        ``round_not_found``, ``client_seeds_closed`` (a stream was drawn, or the round was
        revealed), ``already_contributed``, ``too_many_client_seeds``.
        """
        round_id = check_uuid("round_id", round_id)
        contributor = check_contributor(contributor)
        round_row = await self._lock_round(round_id)
        algorithm = get_algorithm(round_row.version)
        try:
            algorithm.check_client_seed(client_seed)
        except RngError as error:
            raise RngServiceError(RngErrorCode.CLIENT_SEED_INVALID, str(error)) from None
        if await self._reveal_of(round_id) is not None:
            raise RngServiceError(
                RngErrorCode.CLIENT_SEEDS_CLOSED,
                "the round was revealed; client seeds are closed",
                {"reason": "revealed"},
            )
        first_draw = await self._session.scalar(
            select(DrawnStreamRow.label).where(DrawnStreamRow.round_id == round_id).limit(1)
        )
        if first_draw is not None:
            raise RngServiceError(
                RngErrorCode.CLIENT_SEEDS_CLOSED,
                "a stream of the round was drawn; client seeds are closed",
                {"reason": "drawn"},
            )
        contributors = set(
            (
                await self._session.scalars(
                    select(ClientSeedRow.contributor).where(ClientSeedRow.round_id == round_id)
                )
            ).all()
        )
        if contributor in contributors:
            raise RngServiceError(
                RngErrorCode.ALREADY_CONTRIBUTED,
                "this contributor already added a client seed to the round",
                {"contributor": contributor},
            )
        if len(contributors) >= algorithm.max_client_seeds:
            raise RngServiceError(
                RngErrorCode.TOO_MANY_CLIENT_SEEDS,
                f"a round mixes at most {algorithm.max_client_seeds} client seeds",
                {"max_client_seeds": algorithm.max_client_seeds},
            )
        self._session.add(
            ClientSeedRow(
                round_id=round_id,
                contributor=contributor,
                position=len(contributors),
                client_seed=client_seed,
                added_at=await self._clock(),
            )
        )
        await self._session.flush()
        metrics.CLIENT_SEEDS_ADDED.labels(algorithm.version).inc()
        logger.info(
            "rng_client_seed_added",
            round_id=str(round_id),
            contributor=contributor,
            client_seed_count=len(contributors) + 1,
        )

    async def stream(self, round_id: uuid.UUID, label: str) -> Chance:
        """The labelled stream of the round; records the draw and closes client seeds.

        Drawing a label again returns the same stream from its start (it is deterministic), so
        a game recovering from a crash can re-derive it. If a fixed stream is registered for the
        round's table, number and label and fixed decks are allowed, a
        :class:`rng.fixed.FixedChance` is returned instead and the draw is recorded as fixed.
        Refusals: ``round_not_found``, ``label_invalid``, ``round_revealed``,
        ``fixed_decks_disabled`` (the label was drawn fixed and fixed decks are now off).
        """
        round_id = check_uuid("round_id", round_id)
        round_row = await self._lock_round(round_id)
        algorithm = get_algorithm(round_row.version)
        label = check_label(algorithm, label)
        if await self._reveal_of(round_id) is not None:
            raise RngServiceError(
                RngErrorCode.ROUND_REVEALED,
                "the round's seed is revealed; its streams are no longer secret",
            )
        drawn = await self._session.get(DrawnStreamRow, (round_id, label))
        fixed_row = await self._fixed_stream(round_row.table_ref, round_row.round_number, label)
        if drawn is not None:
            use_fixed = drawn.fixed
        else:
            use_fixed = fixed_row is not None and self._allow_fixed
            if fixed_row is not None and not self._allow_fixed:
                logger.warning("rng_fixed_stream_ignored", round_id=str(round_id), label=label)
        chance: Chance
        if use_fixed:
            if not self._allow_fixed:
                raise RngServiceError(
                    RngErrorCode.FIXED_DECKS_DISABLED,
                    "this stream was drawn fixed and fixed decks are disabled",
                    {"label": label},
                )
            assert fixed_row is not None, "a fixed draw without its registration"
            chance = _fixed_chance(fixed_row)
        else:
            seed = self._open(round_row)
            client_seeds = [row.client_seed for row in await self._client_seed_rows(round_id)]
            chance = derive_stream(seed, label, client_seeds, round_row.version)
        if drawn is None:
            self._session.add(
                DrawnStreamRow(
                    round_id=round_id, label=label, fixed=use_fixed, drawn_at=await self._clock()
                )
            )
            await self._session.flush()
            kind = metrics.label_kind(label)
            metrics.STREAMS_DRAWN.labels(kind).inc()
            if use_fixed:
                metrics.FIXED_STREAMS_USED.labels(kind).inc()
            logger.info("rng_stream_drawn", round_id=str(round_id), label=label, fixed=use_fixed)
        return chance

    async def reveal(self, round_id: uuid.UUID) -> bytes:
        """Publish the round's seed and return it; calling again returns the same seed.

        After the reveal no stream can be drawn and no client seed added. Refusal:
        ``round_not_found``.
        """
        round_id = check_uuid("round_id", round_id)
        round_row = await self._lock_round(round_id)
        existing = await self._reveal_of(round_id)
        if existing is not None:
            return existing.seed
        seed = self._open(round_row)
        self._session.add(RevealRow(round_id=round_id, seed=seed, revealed_at=await self._clock()))
        await self._session.flush()
        metrics.REVEALS.labels(round_row.version).inc()
        logger.info("rng_round_revealed", round_id=str(round_id), version=round_row.version)
        return seed

    async def public_round(self, round_id: uuid.UUID) -> PublicRound:
        """The round as anyone may see it: the seed only after the reveal."""
        round_id = check_uuid("round_id", round_id)
        round_row = await self._session.get(RoundRow, round_id)
        if round_row is None:
            raise round_not_found(round_id)
        client_seeds = await self._client_seed_rows(round_id)
        reveal = await self._reveal_of(round_id)
        streams = (
            await self._session.scalars(
                select(DrawnStreamRow)
                .where(DrawnStreamRow.round_id == round_id)
                .order_by(DrawnStreamRow.drawn_at, DrawnStreamRow.label)
            )
        ).all()
        return PublicRound(
            id=round_row.id,
            table_ref=round_row.table_ref,
            round_number=round_row.round_number,
            version=round_row.version,
            commitment=round_row.commitment,
            client_seeds=tuple(row.client_seed.hex() for row in client_seeds),
            contributors=tuple(row.contributor for row in client_seeds),
            seed=None if reveal is None else reveal.seed.hex(),
            committed_at=round_row.committed_at,
            revealed_at=None if reveal is None else reveal.revealed_at,
            streams=tuple(
                DrawnStream(label=row.label, fixed=row.fixed, drawn_at=row.drawn_at)
                for row in streams
            ),
        )

    async def public_rounds(self, round_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, PublicRound]:
        """:meth:`public_round` of many rounds at once (four queries); unknown ids are left out.

        For audits that verify thousands of rounds: the same data, without a round trip per
        round.
        """
        ids = [check_uuid("round_id", round_id) for round_id in round_ids]
        if not ids:
            return {}
        rounds = (await self._session.scalars(select(RoundRow).where(RoundRow.id.in_(ids)))).all()
        seeds: dict[uuid.UUID, list[ClientSeedRow]] = {}
        for row in (
            await self._session.scalars(
                select(ClientSeedRow).where(ClientSeedRow.round_id.in_(ids))
            )
        ).all():
            seeds.setdefault(row.round_id, []).append(row)
        reveals = {
            row.round_id: row
            for row in (
                await self._session.scalars(select(RevealRow).where(RevealRow.round_id.in_(ids)))
            ).all()
        }
        streams: dict[uuid.UUID, list[DrawnStreamRow]] = {}
        for stream_row in (
            await self._session.scalars(
                select(DrawnStreamRow)
                .where(DrawnStreamRow.round_id.in_(ids))
                .order_by(DrawnStreamRow.drawn_at, DrawnStreamRow.label)
            )
        ).all():
            streams.setdefault(stream_row.round_id, []).append(stream_row)
        result: dict[uuid.UUID, PublicRound] = {}
        for round_row in rounds:
            client_seeds = _mixing_order(seeds.get(round_row.id, []))
            reveal = reveals.get(round_row.id)
            result[round_row.id] = PublicRound(
                id=round_row.id,
                table_ref=round_row.table_ref,
                round_number=round_row.round_number,
                version=round_row.version,
                commitment=round_row.commitment,
                client_seeds=tuple(row.client_seed.hex() for row in client_seeds),
                contributors=tuple(row.contributor for row in client_seeds),
                seed=None if reveal is None else reveal.seed.hex(),
                committed_at=round_row.committed_at,
                revealed_at=None if reveal is None else reveal.revealed_at,
                streams=tuple(
                    DrawnStream(label=row.label, fixed=row.fixed, drawn_at=row.drawn_at)
                    for row in streams.get(round_row.id, [])
                ),
            )
        return result

    # --- test-only fixed streams ------------------------------------------------------------

    async def fix_stream(
        self,
        table_ref: uuid.UUID,
        round_number: int,
        label: str,
        *,
        permutation: list[int] | None = None,
        draw: int | None = None,
    ) -> None:
        """Test-only: script the result of one stream of a (future) round.

        Give exactly one of ``permutation`` (answers one ``permutation(n)``) or ``draw``
        (answers one ``randbelow(n)``). Refusals: ``fixed_decks_disabled`` unless the service
        allows fixed decks, ``fixed_stream_invalid``, ``label_invalid``, ``invalid_argument``,
        ``fixed_stream_exists``, ``stream_already_drawn``.
        """
        if not self._allow_fixed:
            raise RngServiceError(
                RngErrorCode.FIXED_DECKS_DISABLED,
                "fixed decks are test-only and disabled here (RAIZ_ALLOW_FIXED_DECKS is off)",
            )
        table_ref = check_uuid("table_ref", table_ref)
        round_number = check_round_number(round_number)
        label = check_label(get_algorithm(ALGORITHM_VERSION), label)
        scripted = check_script(permutation, draw)
        existing_fix = await self._fixed_stream(table_ref, round_number, label)
        if existing_fix is not None:
            raise RngServiceError(
                RngErrorCode.FIXED_STREAM_EXISTS,
                "a fixed stream is already registered for this round and label",
                {"label": label},
            )
        round_id = await self._round_id_of(table_ref, round_number)
        if (
            round_id is not None
            and await self._session.get(DrawnStreamRow, (round_id, label)) is not None
        ):
            raise RngServiceError(
                RngErrorCode.STREAM_ALREADY_DRAWN,
                "this stream of the round was already drawn",
                {"label": label},
            )
        self._session.add(
            FixedStreamRow(
                table_ref=table_ref,
                round_number=round_number,
                label=label,
                permutation=scripted if isinstance(scripted, list) else None,
                draw=scripted if isinstance(scripted, int) else None,
                created_at=await self._clock(),
            )
        )
        await self._session.flush()
        logger.warning(
            "rng_fixed_stream_registered",
            table_ref=str(table_ref),
            round_number=round_number,
            label=label,
        )

    # --- helpers -----------------------------------------------------------------------------

    def _open(self, round_row: RoundRow) -> bytes:
        """The plain seed of a round, checked against its commitment."""
        sealed = SealedSeed(
            key_id=round_row.seal_key_id,
            nonce=round_row.seal_nonce,
            ciphertext=round_row.sealed_seed,
        )
        seed = self._sealer.open(sealed, associated_data(round_row.id))
        algorithm = get_algorithm(round_row.version)
        if not secrets.compare_digest(algorithm.commitment(seed), round_row.commitment):
            msg = f"the sealed seed of round {round_row.id} does not match its commitment"
            raise SealingError(msg)
        return seed

    async def _clock(self) -> dt.datetime:
        """The database server's clock, now (``clock_timestamp()``): every worker dates the
        round's commitment, client seeds, draws and reveal on the same clock, so their order
        in time is their order of happening, whichever worker did each (the public record
        lists the draws by time)."""
        moment: dt.datetime = (
            await self._session.execute(select(func.clock_timestamp()))
        ).scalar_one()
        return moment

    async def _lock_round(self, round_id: uuid.UUID) -> RoundRow:
        round_row = await self._session.scalar(
            select(RoundRow).where(RoundRow.id == round_id).with_for_update()
        )
        if round_row is None:
            raise round_not_found(round_id)
        return round_row

    async def _round_id_of(self, table_ref: uuid.UUID, round_number: int) -> uuid.UUID | None:
        return await self._session.scalar(
            select(RoundRow.id).where(
                RoundRow.table_ref == table_ref, RoundRow.round_number == round_number
            )
        )

    async def _refuse_existing_round(self, table_ref: uuid.UUID, round_number: int) -> None:
        existing = await self._round_id_of(table_ref, round_number)
        if existing is not None:
            raise RngServiceError(
                RngErrorCode.ROUND_EXISTS,
                "this table already committed a round with this number",
                {"round_id": str(existing), "round_number": round_number},
            )

    async def _reveal_of(self, round_id: uuid.UUID) -> RevealRow | None:
        return await self._session.get(RevealRow, round_id)

    async def _client_seed_rows(self, round_id: uuid.UUID) -> list[ClientSeedRow]:
        rows = (
            await self._session.scalars(
                select(ClientSeedRow).where(ClientSeedRow.round_id == round_id)
            )
        ).all()
        return _mixing_order(rows)

    async def _fixed_stream(
        self, table_ref: uuid.UUID, round_number: int, label: str
    ) -> FixedStreamRow | None:
        return await self._session.scalar(
            select(FixedStreamRow).where(
                FixedStreamRow.table_ref == table_ref,
                FixedStreamRow.round_number == round_number,
                FixedStreamRow.label == label,
            )
        )
