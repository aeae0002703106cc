"""``verify-all``: every finished round in the database, the money of every finished match,
and every checkpoint against the leaves, in one consistent snapshot."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import func, select, text

from app.compliance.bundle import BundleReport, verify_bundle
from app.compliance.loader import checkpoint_dict, load_bundles, public_key_dicts
from app.compliance.merkle import MerkleTree, leaf_hash
from app.compliance.models import Checkpoint, MerkleLeaf, RoundSignature
from app.compliance.service import allow_fixed_streams
from app.compliance.verify import Failure, verify_checkpoint
from app.rng_api import RngServices
from app.tables.models import Round, RoundResult

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings
    from app.db import Database
    from rng.service import RngService

__all__ = ("AuditReport", "pinned_keys", "verify_all", "verify_tables")

TABLES_PER_BATCH: Final = 50


@dataclass(slots=True)
class AuditReport:
    """What ``verify-all`` found."""

    rounds: int = 0
    """Finished rounds verified."""
    tables: int = 0
    in_progress: int = 0
    """Rounds still in play (not verifiable until they end)."""
    checkpoints: int = 0
    failures: list[tuple[str, Failure]] = field(default_factory=list)
    """(round or table id, failure)."""
    seconds: float = 0.0
    """Wall time, loading included."""
    verify_seconds: float = 0.0
    """Time spent in the pure verifier alone."""

    @property
    def ok(self) -> bool:
        """Whether everything verified."""
        return not self.failures

    def summary(self) -> str:
        """One line: counts and rounds per second."""
        rate = self.rounds / self.seconds if self.seconds else 0.0
        pure = self.rounds / self.verify_seconds if self.verify_seconds else 0.0
        verdict = "ok" if self.ok else f"{len(self.failures)} FAILED"
        return (
            f"verify-all {verdict}: {self.rounds} rounds of {self.tables} tables, "
            f"{self.checkpoints} checkpoints, {self.in_progress} rounds in play; "
            f"{rate:,.0f} rounds/s ({pure:,.0f} rounds/s verifying, the rest loading)"
        )


async def _merkle_problems(session: AsyncSession, keys: dict[str, bytes]) -> list[Failure]:
    problems: list[Failure] = []
    rows = (
        await session.execute(
            select(
                MerkleLeaf.leaf_index,
                MerkleLeaf.round_id,
                MerkleLeaf.record_hash,
                RoundSignature.record_hash,
            )
            .join(RoundSignature, RoundSignature.round_id == MerkleLeaf.round_id)
            .order_by(MerkleLeaf.leaf_index)
        )
    ).all()
    hashes = []
    for position, (index, round_id, leaf_record, signed_record) in enumerate(rows):
        if index != position:
            problems.append(Failure("inclusion", f"leaf {position}", "missing from the leaves"))
            return problems
        if bytes(leaf_record) != bytes(signed_record):
            problems.append(
                Failure(
                    "inclusion", f"leaf {index}", f"is not the signed record of round {round_id}"
                )
            )
        hashes.append(leaf_hash(bytes(leaf_record)))
    tree = MerkleTree(hashes)
    for checkpoint in await session.scalars(select(Checkpoint).order_by(Checkpoint.id)):
        data = checkpoint_dict(checkpoint)
        problem = verify_checkpoint(data, keys)
        if problem is None and checkpoint.tree_size > tree.size:
            problem = f"covers {checkpoint.tree_size} leaves, only {tree.size} exist"
        if problem is None and tree.root(checkpoint.tree_size) != bytes(checkpoint.root):
            problem = "its root is not the root of the leaves it covers"
        if problem is not None:
            problems.append(Failure("inclusion", f"checkpoint {checkpoint.id}", problem))
    return problems


async def pinned_keys(session: AsyncSession) -> dict[str, bytes]:
    """Every signing public key the service ever used, by key id (what bundles verify with)."""
    return {
        key["key_id"]: bytes.fromhex(key["public_key"]) for key in await public_key_dicts(session)
    }


async def verify_tables(
    session: AsyncSession,
    rng: RngService,
    table_ids: Sequence[uuid.UUID],
    keys: dict[str, bytes],
    *,
    allow_fixed: bool,
    in_thread: bool = False,
) -> AsyncIterator[tuple[dict[str, Any], BundleReport, float]]:
    """Load each table's bundle (in batches) and verify it: ``(bundle, report, seconds)``.

    ``in_thread`` runs the (CPU-bound) verifier in a thread so that a serving worker's event
    loop stays responsive.
    """
    for start in range(0, len(table_ids), TABLES_PER_BATCH):
        chunk = table_ids[start : start + TABLES_PER_BATCH]
        for bundle in (await load_bundles(session, rng, chunk)).values():
            began = time.perf_counter()
            if in_thread:
                outcome = await asyncio.to_thread(
                    verify_bundle, bundle, public_keys=keys, allow_fixed_streams=allow_fixed
                )
            else:
                outcome = verify_bundle(bundle, public_keys=keys, allow_fixed_streams=allow_fixed)
            yield bundle, outcome, time.perf_counter() - began


async def verify_all(database: Database, settings: Settings) -> AuditReport:
    """Verify every finished round (read-only, repeatable-read snapshot)."""
    started = time.perf_counter()
    report = AuditReport()
    rng = RngServices.from_settings(settings)
    allow_fixed = allow_fixed_streams(settings)
    async with database.session() as session:
        await session.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"))
        keys = await pinned_keys(session)
        table_ids = list(
            (
                await session.scalars(
                    select(Round.table_id)
                    .join(RoundResult, RoundResult.round_id == Round.id)
                    .group_by(Round.table_id)
                    .order_by(Round.table_id)
                )
            ).all()
        )
        report.in_progress = int(
            await session.scalar(
                select(func.count())
                .select_from(Round)
                .outerjoin(RoundResult, RoundResult.round_id == Round.id)
                .where(RoundResult.round_id.is_(None))
            )
            or 0
        )
        service = rng.for_session(session)
        async for bundle, outcome, seconds in verify_tables(
            session, service, table_ids, keys, allow_fixed=allow_fixed
        ):
            report.verify_seconds += seconds
            report.tables += 1
            report.rounds += len(bundle["rounds"])
            if outcome.failure is not None:
                report.failures.append((outcome.failed_round or outcome.table_id, outcome.failure))
        report.checkpoints = int(
            await session.scalar(select(func.count()).select_from(Checkpoint)) or 0
        )
        report.failures.extend(
            ("merkle", problem) for problem in await _merkle_problems(session, keys)
        )
        await session.rollback()
    report.seconds = time.perf_counter() - started
    return report
