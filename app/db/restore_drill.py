"""The restore drill (``raiz db restore-drill``): a logical backup that provably restores.

1. **Backup**: one read-only, repeatable-read transaction on the source exports its snapshot;
   ``pg_dump --format=custom --snapshot`` dumps exactly that snapshot while the same
   transaction reads the source's facts (below), so both describe one instant even while the
   service keeps writing.  Nothing writes to the source: its connection is read-only
   (``default_transaction_read_only``) and ``pg_dump`` only reads.
2. **Restore**: a new scratch database (``raiz_restore_drill_<time>_<random>``, from
   ``template0``) on the scratch server; ``pg_restore --single-transaction --exit-on-error``
   loads it all or nothing.  Owners and grants are kept (no ``--no-owner`` or
   ``--no-privileges``): a copy that lost them would serve as a superuser or refuse the service's
   role, and the append-only protection rests on the service's role owning nothing
   (docs/operations.md, "Database roles").  So the roles (``raiz``, ``raiz_service``) must exist
   on the scratch server, and the drill connects there as a superuser (or a role that is a
   member of the owner and may create databases).
3. **Checks on the copy**: the ledger reconciliation (``raiz ledger reconcile``) and the full
   round verification (``raiz audit verify-all``), with the operator's settings (the seed
   keyring unseals the seeds) pointed at the copy.
4. **Comparison** (:mod:`app.db.drill_facts`), source snapshot against copy: every table of
   every schema (row count and an order-independent digest of the rows' text), every
   sequence's position, the ledger's
   balances per currency, the latest checkpoint (id, tree size, Merkle root, key), the
   Alembic heads, and the structure (owners and grants of schemas, tables, columns and
   functions, default privileges, triggers with their enabled state, constraints with their
   validation, indexes with their validity, function bodies, extensions).
5. The scratch database is dropped (unless kept) and the dump deleted (unless written to a
   file the operator named), also when the drill is stopped (SIGINT, or SIGTERM through
   :func:`until_terminated`: the running client tool is killed first).  What a drill killed
   outright (SIGKILL, a crash) left is swept by the next drill: a scratch database or a dump
   folder older than ``LEFTOVER_AGE`` is removed and reported, a younger one only reported (it
   may be another drill's, still running).

Any difference or failure is a problem; the report lists each one.  Row contents never appear
in it (the dump holds sealed seeds and password hashes: it is written to a private temporary
directory).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import asyncpg
from sqlalchemy.engine import make_url

from app.db.drill_facts import Facts, compare_facts, quote, read_facts

if TYPE_CHECKING:
    from app.config import Settings

T = TypeVar("T")

__all__ = (
    "SCRATCH_PREFIX",
    "DrillCannotRun",
    "DrillHooks",
    "DrillReport",
    "run_drill",
    "until_terminated",
)

SCRATCH_PREFIX = "raiz_restore_drill_"
"""Name prefix of the scratch databases the drill creates (and drops)."""
FOLDER_PREFIX = "raiz-restore-drill-"
"""Name prefix of the private temporary folders that hold the dumps."""
STAMP_FORMAT = "%Y%m%d%H%M%S"
LEFTOVER_AGE = dt.timedelta(hours=24)
"""A scratch database or dump folder older than this is an interrupted drill's: no drill runs
this long, so the next drill removes it."""
APPLICATION_NAME = "raiz-restore-drill"
OUTPUT_TAIL_CHARS = 2_000
"""What a failed ``pg_dump``/``pg_restore`` said, at most (its end)."""

SESSION_SETTINGS = {
    "application_name": APPLICATION_NAME,
    # Rows are digested as text: both sides must print them the same way.
    "TimeZone": "UTC",
    "DateStyle": "ISO, YMD",
    "IntervalStyle": "postgres",
    "extra_float_digits": "3",
    "bytea_output": "hex",
    # A full read of every table, and a transaction kept open while pg_dump runs.
    "statement_timeout": "0",
    "idle_in_transaction_session_timeout": "0",
}
READ_ONLY = {**SESSION_SETTINGS, "default_transaction_read_only": "on"}


class DrillCannotRun(Exception):
    """The drill could not run at all (a tool missing, a server unreachable): not a finding."""


Hook = Callable[[str], Awaitable[None]]


@dataclass(slots=True)
class DrillHooks:
    """Test seams: each is called with a database URL at one point of the drill."""

    after_snapshot: Hook | None = None
    """The source's, once its snapshot is exported (a write here is not in the backup)."""
    before_restore: Hook | None = None
    """The empty scratch database's."""
    after_restore: Hook | None = None
    """The restored copy's, before anything reads it."""


@dataclass(slots=True)
class DrillReport:
    """What the drill did and found."""

    source: str
    """The source's URL, without its password."""
    scratch: str
    """The scratch database's URL, without its password."""
    problems: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time of each step."""
    dump_bytes: int = 0
    tables: int = 0
    rows: int = 0
    reconcile: str = ""
    """The reconciliation's summary line."""
    verify: str = ""
    """``verify-all``'s summary line."""
    kept: bool = False
    """Whether the scratch database was left in place."""
    notes: list[str] = field(default_factory=list)
    """What the drill found of interrupted drills (removed, or too young to remove)."""

    @property
    def ok(self) -> bool:
        """Whether the backup restored and everything matched and verified."""
        return not self.problems

    def lines(self) -> list[str]:
        """The report, one line each: steps and figures, then problems, then the verdict."""
        lines = [f"source: {self.source}", f"copy: {self.scratch}"]
        lines += [f"note: {note}" for note in self.notes]
        if self.dump_bytes:
            lines.append(f"backup: {self.dump_bytes:,} bytes (pg_dump --format=custom)")
        if self.tables:
            lines.append(f"compared: {self.tables} tables, {self.rows:,} rows")
        if self.reconcile:
            lines.append(self.reconcile)
        if self.verify:
            lines.append(self.verify)
        steps = ", ".join(f"{step} {seconds:.1f} s" for step, seconds in self.seconds.items())
        if steps:
            lines.append(f"time: {steps}")
        lines += [f"PROBLEM {problem}" for problem in self.problems]
        if self.kept:
            lines.append(f"kept the copy: {self.scratch}")
        verdict = "ok" if self.ok else f"FAILED ({len(self.problems)} problems)"
        lines.append(f"restore drill {verdict}")
        return lines


def _libpq(url: str, database: str | None = None) -> tuple[str, dict[str, str]]:
    """``url`` for libpq tools (plain ``postgresql://``, optionally another database), without
    its password (a command line is visible to every local user), and the environment that
    passes the password instead."""
    parsed = make_url(url.replace("postgres://", "postgresql://", 1))
    password = parsed.password
    parsed = parsed.set(drivername="postgresql", password=None)
    if database is not None:
        parsed = parsed.set(database=database)
    environment = {"PGAPPNAME": APPLICATION_NAME}
    if password is not None:
        environment["PGPASSWORD"] = str(password)
    return parsed.render_as_string(hide_password=False), environment


def _with_database(url: str, database: str) -> str:
    parsed = make_url(url.replace("postgres://", "postgresql://", 1))
    return parsed.set(drivername="postgresql", database=database).render_as_string(
        hide_password=False
    )


def _shown(url: str) -> str:
    return make_url(url.replace("postgres://", "postgresql://", 1)).render_as_string(
        hide_password=True
    )


async def _connect(url: str, what: str, settings: dict[str, str]) -> asyncpg.Connection:
    try:
        database = make_url(url.replace("postgres://", "postgresql://", 1)).database
        return await asyncpg.connect(
            _with_database(url, database or "postgres"), server_settings=settings
        )
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
        raise DrillCannotRun(f"cannot connect to the {what} ({_shown(url)}): {error}") from None


async def _run_tool(arguments: list[str], environment: dict[str, str]) -> tuple[int, str]:
    """Run a PostgreSQL client tool; its exit status and what it wrote to stderr."""
    if shutil.which(arguments[0]) is None:
        raise DrillCannotRun(f"{arguments[0]} is not installed (PostgreSQL client tools)")
    process = await asyncio.create_subprocess_exec(
        *arguments,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **environment},
    )
    try:
        _, error = await process.communicate()
    except asyncio.CancelledError:
        # the drill is stopped: the tool must not outlive it (pg_restore would keep writing
        # into the database being dropped, pg_dump into the folder being removed)
        process.kill()
        await process.wait()
        raise
    return int(process.returncode or 0), error.decode(errors="replace").strip()[-OUTPUT_TAIL_CHARS:]


def _scratch_name(now: dt.datetime) -> str:
    return f"{SCRATCH_PREFIX}{now.strftime(STAMP_FORMAT)}_{secrets.token_hex(3)}"


def _created(name: str, prefix: str) -> dt.datetime | None:
    """When the drill that named ``name`` (``<prefix><stamp>_<random>``) started."""
    try:
        stamp = name.removeprefix(prefix).split("_", 1)[0]
        return dt.datetime.strptime(stamp, STAMP_FORMAT).replace(tzinfo=dt.UTC)
    except ValueError:
        return None


async def _sweep_leftovers(
    admin: asyncpg.Connection, folder: Path, now: dt.datetime, report: DrillReport
) -> None:
    """Remove what interrupted drills left (older than ``LEFTOVER_AGE``) and note the rest:
    scratch databases on the scratch server, dump folders beside ``folder`` owned by us."""
    names = await admin.fetch(
        "SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname",
        SCRATCH_PREFIX,
    )
    for (name,) in names:
        created = _created(name, SCRATCH_PREFIX)
        if created is not None and now - created > LEFTOVER_AGE:
            await admin.execute(f"DROP DATABASE IF EXISTS {quote(name)} WITH (FORCE)")
            report.notes.append(f"dropped {name}, left by a drill interrupted on {created:%c}")
        else:
            report.notes.append(
                f"{name} exists: another drill is running, or one stopped within "
                f"{LEFTOVER_AGE.total_seconds() / 3600:.0f} h (a later drill drops it)"
            )
    for other in folder.parent.glob(f"{FOLDER_PREFIX}*"):
        created = _created(other.name, FOLDER_PREFIX)
        if other == folder or created is None or other.stat().st_uid != os.getuid():
            continue
        if now - created > LEFTOVER_AGE:
            await asyncio.to_thread(shutil.rmtree, other, ignore_errors=True)
            report.notes.append(f"removed {other}, left by a drill interrupted on {created:%c}")


async def until_terminated(work: Awaitable[T]) -> T:
    """Await ``work``; SIGTERM cancels it (as SIGINT does under :func:`asyncio.run`), so that
    its ``finally`` clauses run: the drill drops its scratch database and removes its dump."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work)
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await task
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


class _Clock:
    def __init__(self, report: DrillReport) -> None:
        self._report = report
        self._started = time.perf_counter()

    def lap(self, step: str) -> None:
        now = time.perf_counter()
        self._report.seconds[step] = now - self._started
        self._started = now


async def _backup(
    source_url: str, dump: Path, hooks: DrillHooks, report: DrillReport, clock: _Clock
) -> Facts | None:
    """Dump the source's snapshot to ``dump`` and read its facts in that snapshot (at once:
    pg_dump in its process, the facts on this connection); None when pg_dump failed."""
    connection = await _connect(source_url, "source", READ_ONLY)
    try:
        async with connection.transaction(isolation="repeatable_read", readonly=True):
            snapshot = str(await connection.fetchval("SELECT pg_export_snapshot()"))
            if hooks.after_snapshot is not None:
                await hooks.after_snapshot(source_url)
            target, environment = _libpq(source_url)
            dumped = asyncio.ensure_future(
                _run_tool(
                    [
                        "pg_dump",
                        "--format=custom",
                        f"--snapshot={snapshot}",
                        "--no-password",
                        f"--file={dump}",
                        f"--dbname={target}",
                    ],
                    environment,
                )
            )
            try:
                facts = await read_facts(connection)
            finally:
                status, said = await dumped
    finally:
        await connection.close()
    clock.lap("backup")
    if status != 0:
        report.problems.append(f"backup: pg_dump exited with {status}: {said}")
        return None
    report.dump_bytes = (await asyncio.to_thread(dump.stat)).st_size
    return facts


async def _checks_on_the_copy(
    copy_url: str, settings: Settings, jobs: int, report: DrillReport, clock: _Clock
) -> None:
    """``raiz ledger reconcile`` and ``raiz audit verify-all`` on the copy."""
    from app.compliance.audit import verify_all
    from app.db import Database
    from ledger.reconcile import reconcile

    copy_settings = settings.model_copy(update={"database_url": copy_url})
    database = Database.connect(copy_url, copy_settings)
    try:
        reconciled = await reconcile(database.engine)
        clock.lap("reconcile")
        report.reconcile = reconciled.summary()
        report.problems += [
            f"reconcile: {problem.check}: {problem.message}" for problem in reconciled.problems
        ]
        verified = await verify_all(database, copy_settings, jobs=jobs)
        clock.lap("verify-all")
        report.verify = verified.summary()
        report.problems += [
            f"verify-all: {where}: {failure}" for where, failure in verified.failures
        ]
    finally:
        await database.dispose()


async def run_drill(
    source_url: str,
    scratch_server_url: str,
    settings: Settings,
    *,
    keep: bool = False,
    dump_file: Path | None = None,
    jobs: int = 1,
    hooks: DrillHooks | None = None,
) -> DrillReport:
    """Back up ``source_url``, restore it into a new database on ``scratch_server_url``'s
    server (connecting to that URL's database to create and drop it), check and compare the
    copy.  ``settings`` are the operator's (their seed keyring); ``dump_file`` keeps the backup
    there; ``jobs`` is verify-all's processes.  Raises :class:`DrillCannotRun` when a tool or a
    server is missing; every finding is in the report."""
    hooks = hooks or DrillHooks()
    now = dt.datetime.now(dt.UTC)
    name = _scratch_name(now)
    copy_url = _with_database(scratch_server_url, name)
    report = DrillReport(source=_shown(source_url), scratch=_shown(copy_url), kept=keep)
    clock = _Clock(report)
    # mode 0700; named by the start like the database, for the sweep of leftovers
    folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{now.strftime(STAMP_FORMAT)}_"))
    dump = dump_file or folder / "source.dump"
    try:
        source_facts = await _backup(source_url, dump, hooks, report, clock)
        if source_facts is None:
            report.kept = False
            return report
        admin = await _connect(scratch_server_url, "scratch server", SESSION_SETTINGS)
        try:
            await _sweep_leftovers(admin, folder, now, report)
            await admin.execute(f"CREATE DATABASE {quote(name)} TEMPLATE template0")
        except asyncpg.PostgresError as error:
            raise DrillCannotRun(f"cannot create the scratch database {name}: {error}") from None
        finally:
            await admin.close()
        try:
            await _restore_and_check(
                copy_url,
                dump,
                source_facts=source_facts,
                settings=settings,
                jobs=jobs,
                hooks=hooks,
                report=report,
                clock=clock,
            )
        finally:
            if not keep:
                await _drop(scratch_server_url, name)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return report


async def _restore_and_check(
    copy_url: str,
    dump: Path,
    *,
    source_facts: Facts,
    settings: Settings,
    jobs: int,
    hooks: DrillHooks,
    report: DrillReport,
    clock: _Clock,
) -> None:
    if hooks.before_restore is not None:
        await hooks.before_restore(copy_url)
    target, environment = _libpq(copy_url)
    status, said = await _run_tool(
        [
            "pg_restore",
            "--single-transaction",
            "--exit-on-error",
            "--no-password",
            f"--dbname={target}",
            str(dump),
        ],
        environment,
    )
    clock.lap("restore")
    if status != 0:
        report.problems.append(f"restore: pg_restore exited with {status}: {said}")
        return
    if hooks.after_restore is not None:
        await hooks.after_restore(copy_url)
    connection = await _connect(copy_url, "copy", READ_ONLY)
    try:
        async with connection.transaction(isolation="repeatable_read", readonly=True):
            copy_facts = await read_facts(connection)
    finally:
        await connection.close()
    clock.lap("compare")
    report.tables = len(source_facts.tables)
    report.rows = source_facts.rows
    report.problems += compare_facts(source_facts, copy_facts)
    await _checks_on_the_copy(copy_url, settings, jobs, report, clock)


async def _drop(scratch_server_url: str, name: str) -> None:
    admin = await _connect(scratch_server_url, "scratch server", SESSION_SETTINGS)
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {quote(name)} WITH (FORCE)")
    finally:
        await admin.close()
