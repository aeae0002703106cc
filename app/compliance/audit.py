"""``verify-all``: every finished round in the database, the money of every finished match,
and every checkpoint against the leaves, in one consistent snapshot."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import multiprocessing
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import func, select, text

from app.compliance.bundle import BundleReport, verify_bundle
from app.compliance.failures import Failure
from app.compliance.loader import checkpoint_dict, load_bundles, public_key_dicts
from app.compliance.merkle import MerkleTree, leaf_hash
from app.compliance.models import Checkpoint, MerkleLeaf, RoundSignature
from app.compliance.service import allow_fixed_streams
from app.compliance.verify import verify_checkpoint
from app.rng_api import RngServices
from app.tables.models import Round, RoundResult

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings
    from app.db import Database
    from rng.service import RngService

__all__ = (
    "AuditReport",
    "few_collections",
    "finished_table_ids",
    "pinned_keys",
    "verify_all",
    "verify_tables",
)

TABLES_PER_BATCH: Final = 50
ROWS_PER_STATEMENT = 50_000
"""Leaves or table ids one statement of ``verify-all`` reads: the history is kept ten years
and every statement must end within ``RAIZ_DB_STATEMENT_TIMEOUT_MS`` (one statement over every
leaf took 6.5 s at 600,000 rounds)."""
_SNAPSHOT_ID = re.compile(r"[0-9A-F]+-[0-9A-F]+(-[0-9]+)?")
"""What ``pg_export_snapshot()`` returns (checked before it is spliced into ``SET``)."""


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
    """Time spent in the pure verifier alone (summed over the processes)."""
    jobs: int = 1
    """Processes that verified the tables."""

    @property
    def ok(self) -> bool:
        """Whether everything verified."""
        return not self.failures

    def summary(self) -> str:
        """One line: counts and rounds per second."""
        rate = self.rounds / self.seconds if self.seconds else 0.0
        pure = self.rounds / self.verify_seconds if self.verify_seconds else 0.0
        verdict = "ok" if self.ok else f"{len(self.failures)} FAILED"
        per_process = " per process" if self.jobs > 1 else ""
        processes = f" in {self.jobs} processes" if self.jobs > 1 else ""
        return (
            f"verify-all {verdict}: {self.rounds} rounds of {self.tables} tables, "
            f"{self.checkpoints} checkpoints, {self.in_progress} rounds in play; "
            f"{rate:,.0f} rounds/s{processes} ({pure:,.0f} rounds/s verifying{per_process}, "
            "the rest loading)"
        )


async def _merkle_problems(session: AsyncSession, keys: dict[str, bytes]) -> list[Failure]:
    problems: list[Failure] = []
    hashes: list[bytes] = []
    while True:  # page by page: one statement per page, not one over ten years of leaves
        query = (
            select(
                MerkleLeaf.leaf_index,
                MerkleLeaf.round_id,
                MerkleLeaf.record_hash,
                RoundSignature.record_hash,
            )
            .join(RoundSignature, RoundSignature.round_id == MerkleLeaf.round_id)
            .order_by(MerkleLeaf.leaf_index)
            .limit(ROWS_PER_STATEMENT)
        )
        if hashes:
            query = query.where(MerkleLeaf.leaf_index >= len(hashes))
        rows = (await session.execute(query)).all()
        for index, round_id, leaf_record, signed_record in rows:
            position = len(hashes)
            if index != position:
                problems.append(Failure("inclusion", f"leaf {position}", "missing from the leaves"))
                return problems
            if bytes(leaf_record) != bytes(signed_record):
                problems.append(
                    Failure(
                        "inclusion",
                        f"leaf {index}",
                        f"is not the signed record of round {round_id}",
                    )
                )
            hashes.append(leaf_hash(bytes(leaf_record)))
        if len(rows) < ROWS_PER_STATEMENT:
            break
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


async def finished_table_ids(session: AsyncSession) -> list[uuid.UUID]:
    """Every table with a finished round, in id order (what ``verify-all`` goes through), page
    by page (keyset on the table id)."""
    table_ids: list[uuid.UUID] = []
    while True:
        query = (
            select(Round.table_id)
            .join(RoundResult, RoundResult.round_id == Round.id)
            .group_by(Round.table_id)
            .order_by(Round.table_id)
            .limit(ROWS_PER_STATEMENT)
        )
        if table_ids:
            query = query.where(Round.table_id > table_ids[-1])
        page = list((await session.scalars(query)).all())
        table_ids.extend(page)
        if len(page) < ROWS_PER_STATEMENT:
            return table_ids


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


@contextlib.contextmanager
def few_collections() -> Iterator[None]:
    """Run the cyclic collector every 20,000 allocations instead of 700, then restore it.

    Loading builds trees of small dicts and lists, far more allocations than anything else a
    ``verify-all`` process does; at CPython's default threshold the collector keeps traversing
    them and cost a fifth of the run. At 20,000 it finds the same (nearly nothing: the bundles
    hold no cycles) at no measurable cost (docs/compliance.md § Benchmark). For the command
    and its worker processes only: a serving process keeps the default.
    """
    thresholds = gc.get_threshold()
    gc.set_threshold(20_000, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


@dataclass(slots=True)
class _Share:
    """What one batch of tables verified in a worker process found (sent back pickled)."""

    tables: int = 0
    rounds: int = 0
    verify_seconds: float = 0.0
    failures: list[tuple[str, Failure]] = field(default_factory=list)

    def add_to(self, report: AuditReport) -> None:
        report.tables += self.tables
        report.rounds += self.rounds
        report.verify_seconds += self.verify_seconds
        report.failures.extend(self.failures)


async def _verify_batches(
    session: AsyncSession,
    rng: RngService,
    table_ids: Sequence[uuid.UUID],
    keys: dict[str, bytes],
    *,
    allow_fixed: bool,
) -> _Share:
    share = _Share()
    async for bundle, outcome, seconds in verify_tables(
        session, rng, table_ids, keys, allow_fixed=allow_fixed
    ):
        share.verify_seconds += seconds
        share.tables += 1
        share.rounds += len(bundle["rounds"])
        if outcome.failure is not None:
            share.failures.append((outcome.failed_round or outcome.table_id, outcome.failure))
    return share


_WORKER: dict[str, Any] = {}
"""In a worker process: the database URL, settings, snapshot and keys of its ``verify-all``."""


def _start_worker(
    url: str, settings: Settings, snapshot: str, keys: dict[str, bytes], allow_fixed: bool
) -> None:
    _WORKER.update(url=url, settings=settings, snapshot=snapshot, keys=keys, allow=allow_fixed)


def _verify_in_worker(table_ids: list[uuid.UUID]) -> _Share:
    """One batch of tables, in a worker process, in the parent's snapshot."""
    from app.db import Database

    async def work() -> _Share:
        settings = _WORKER["settings"]
        database = Database.connect(_WORKER["url"], settings)
        try:
            async with database.session() as session:
                await session.execute(
                    text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                )
                # the very rows the parent sees: the snapshot it exported and keeps open
                await session.execute(text(f"SET TRANSACTION SNAPSHOT '{_WORKER['snapshot']}'"))
                rng = RngServices.from_settings(settings).for_session(session)
                share = await _verify_batches(
                    session, rng, table_ids, _WORKER["keys"], allow_fixed=_WORKER["allow"]
                )
                await session.rollback()
                return share
        finally:
            await database.dispose()

    with few_collections():
        return asyncio.run(work())


async def _verify_in_processes(
    database: Database,
    settings: Settings,
    snapshot: str,
    table_ids: Sequence[uuid.UUID],
    keys: dict[str, bytes],
    *,
    allow_fixed: bool,
    jobs: int,
) -> list[_Share]:
    if not _SNAPSHOT_ID.fullmatch(snapshot):
        raise RuntimeError(f"unexpected snapshot id {snapshot!r}")
    url = database.engine.url.render_as_string(hide_password=False)
    size = min(TABLES_PER_BATCH, -(-len(table_ids) // jobs))  # every worker has a share
    batches = [list(table_ids[start : start + size]) for start in range(0, len(table_ids), size)]
    loop = asyncio.get_running_loop()
    # spawn: a fresh interpreter per worker (no copy of this process's event loop and pool)
    with ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(url, settings, snapshot, keys, allow_fixed),
    ) as pool:
        return list(
            await asyncio.gather(
                *(loop.run_in_executor(pool, _verify_in_worker, batch) for batch in batches)
            )
        )


async def verify_all(database: Database, settings: Settings, *, jobs: int = 1) -> AuditReport:
    """Verify every finished round (read-only, repeatable-read snapshot).

    ``jobs`` > 1 verifies the tables in that many worker processes, batch by batch; each
    imports this transaction's snapshot, so every process sees the same rows.  The report is
    the same as with one process (failures in table order).
    """
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    started = time.perf_counter()
    report = AuditReport(jobs=jobs)
    rng = RngServices.from_settings(settings)
    allow_fixed = allow_fixed_streams(settings)
    async with database.session() as session:
        await session.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"))
        # This transaction sits idle while the rounds are verified (in worker processes that
        # import its snapshot, for minutes on a year of rounds): the server's
        # idle_in_transaction_session_timeout (60 s in ops/deploy/postgresql.conf, there for
        # stuck clients) must not end it.  For this transaction only; it ends with the command.
        await session.execute(text("SET LOCAL idle_in_transaction_session_timeout = 0"))
        if jobs > 1:
            snapshot = str(await session.scalar(text("SELECT pg_export_snapshot()")))
        keys = await pinned_keys(session)
        table_ids = await finished_table_ids(session)
        report.in_progress = int(
            await session.scalar(
                select(func.count())
                .select_from(Round)
                .outerjoin(RoundResult, RoundResult.round_id == Round.id)
                .where(RoundResult.round_id.is_(None))
            )
            or 0
        )
        if jobs > 1 and table_ids:
            shares = await _verify_in_processes(
                database, settings, snapshot, table_ids, keys, allow_fixed=allow_fixed, jobs=jobs
            )
        else:
            service = rng.for_session(session)
            shares = [
                await _verify_batches(session, service, table_ids, keys, allow_fixed=allow_fixed)
            ]
        for share in shares:
            share.add_to(report)
        report.checkpoints = int(
            await session.scalar(select(func.count()).select_from(Checkpoint)) or 0
        )
        report.failures.extend(
            ("merkle", problem) for problem in await _merkle_problems(session, keys)
        )
        await session.rollback()
    report.seconds = time.perf_counter() - started
    return report
