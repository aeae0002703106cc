"""``raiz``: the command line of operators and compliance staff."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from app.compliance.cli import jobs_option

if TYPE_CHECKING:
    from app.config import Settings
    from app.db import Database

__all__ = ("main",)

T = TypeVar("T")

EXIT_CANNOT_RUN = 3
"""Exit status when a command could not run at all: unusable settings, or no database.

(1 is "the check found problems", 2 "bad arguments or unknown ids".)"""

_UNAVAILABLE_SQLSTATES = ("08", "28", "3D", "53", "57P")
"""PostgreSQL error codes (prefixes) meaning "no usable connection": connection exception,
invalid authorization, no such database, insufficient resources, server shut down or starting
(not 57014, a statement cancelled: see :func:`_statement_timed_out`)."""


def _database_unavailable(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) says the database cannot be reached or used."""
    import asyncpg

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, asyncpg.exceptions.ConnectionDoesNotExistError):
            return True
        if isinstance(current, OSError) and _raised_by_the_driver(current):
            return True  # refused, unreachable, unknown host, timed out (not a file error)
        if isinstance(current, asyncpg.PostgresError):
            sqlstate = str(getattr(current, "sqlstate", "") or "")
            return sqlstate.startswith(_UNAVAILABLE_SQLSTATES)
        current = current.__cause__ or current.__context__
    return False


def _statement_timed_out(error: BaseException) -> bool:
    """Whether ``error`` is a statement cancelled by the server's statement timeout."""
    import asyncpg

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, asyncpg.QueryCanceledError):
            return True
        current = current.__cause__ or current.__context__
    return False


def _schema_missing(error: BaseException) -> str | None:
    """The server's message when ``error`` says a table or schema of ours does not exist (a
    database that was never migrated), else ``None``."""
    import asyncpg

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        missing = (asyncpg.exceptions.UndefinedTableError, asyncpg.InvalidSchemaNameError)
        if isinstance(current, missing):
            return str(current.args[0]) if current.args else type(current).__name__
        current = current.__cause__ or current.__context__
    return None


def _permission_denied(error: BaseException) -> str | None:
    """The server's message when ``error`` is a privilege the connected role lacks (e.g.
    migrations run as the serving role, which owns nothing), else ``None``."""
    import asyncpg

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, asyncpg.InsufficientPrivilegeError):
            return str(current.args[0]) if current.args else type(current).__name__
        current = current.__cause__ or current.__context__
    return None


def _raised_by_the_driver(error: BaseException) -> bool:
    """Whether ``error`` was raised while the database driver connected or talked, or while
    the embedded server started."""
    frame = error.__traceback__
    while frame is not None:
        module = str(frame.tb_frame.f_globals.get("__name__", ""))
        if module.partition(".")[0] in ("asyncpg", "sqlalchemy", "alembic", "pgserver"):
            return True
        if module == "app.db.embedded":  # the embedded server's data directory
            return True
        frame = frame.tb_next
    return False


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _database_named(migrations: bool = False) -> str:
    """The configured database URL without its password (for error messages); with
    ``migrations``, the URL migrations use (``RAIZ_MIGRATION_DATABASE_URL`` when set)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    variable = "DATABASE_URL"
    url = os.environ.get("DATABASE_URL") or os.environ.get("RAIZ_DATABASE_URL")
    if migrations and os.environ.get("RAIZ_MIGRATION_DATABASE_URL", "").strip():
        variable, url = "RAIZ_MIGRATION_DATABASE_URL", os.environ["RAIZ_MIGRATION_DATABASE_URL"]
    if not url:
        return "the embedded database"
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return variable


def _variable(location: tuple[int | str, ...]) -> str:
    """The environment variable of a setting's validation error location."""
    if not location:
        return "settings"
    name = str(location[0])
    return "DATABASE_URL" if name == "database_url" else f"RAIZ_{name.upper()}"


class RaizGroup(click.Group):
    """The ``raiz`` group: a command that cannot run says why in one line, never with a
    traceback, and exits with :data:`EXIT_CANNOT_RUN`."""

    def invoke(self, ctx: click.Context) -> object:
        from alembic.util.exc import CommandError
        from pydantic import ValidationError
        from sqlalchemy.exc import ArgumentError

        from app.config import ConfigurationError, get_settings

        try:
            return super().invoke(ctx)
        except ValidationError as error:
            # the variables' names, never their values (they may be keys)
            problems = "; ".join(
                f"{_variable(problem['loc'])}: {problem['msg']}"
                for problem in error.errors(include_url=False, include_input=False)
            )
            click.echo(f"error: configuration: {problems}", err=True)
        except (ConfigurationError, ArgumentError) as error:
            click.echo(f"error: configuration: {_first_line(error)}", err=True)
        except CommandError as error:
            # e.g. a database migrated by a newer release: "Can't locate revision ..."
            click.echo(f"error: migrations: {_first_line(error)}", err=True)
        except Exception as error:
            if _database_unavailable(error):
                click.echo(
                    f"error: database unavailable "
                    f"({_database_named(ctx.invoked_subcommand == 'db')}): "
                    f"{type(error).__name__}: {_first_line(error)}",
                    err=True,
                )
            elif _statement_timed_out(error):
                click.echo(
                    "error: database: a statement ran past RAIZ_DB_STATEMENT_TIMEOUT_MS "
                    f"({get_settings().db_statement_timeout_ms} ms) or waited "
                    "that long for a lock; raise it for this command",
                    err=True,
                )
            elif (missing := _schema_missing(error)) is not None:
                click.echo(
                    f"error: database not migrated ({_database_named()}): {missing}; "
                    "run `raiz db upgrade`",
                    err=True,
                )
            elif (denied := _permission_denied(error)) is not None:
                click.echo(
                    "error: database: permission denied "
                    f"({_database_named(ctx.invoked_subcommand == 'db')}): {denied}; "
                    "migrations run as the schemas' owner: set RAIZ_MIGRATION_DATABASE_URL "
                    "(docs/operations.md, database roles)",
                    err=True,
                )
            else:
                raise
        sys.exit(EXIT_CANNOT_RUN)


def run_with_database(work: Callable[[Database, Settings], Awaitable[T]]) -> T:
    """Run ``work`` with a pool on the configured (or embedded) database, then close it."""
    from app.config import get_settings
    from app.db import Database, resolve_database_url
    from app.logging import configure_logging

    settings = get_settings()
    # Log lines go to stderr: stdout is the command's answer (JSON for some commands).
    configure_logging(settings.log_level, json=settings.log_json)
    url = resolve_database_url(settings)

    async def runner() -> T:
        database = Database.connect(url, settings)
        try:
            return await work(database, settings)
        finally:
            await database.dispose()

    return asyncio.run(runner())


@click.group(cls=RaizGroup, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Raiz: auditable real-money Cacheta, Pife and Truco tables."""


@main.command()
@click.option("--host", default=None, help="Interface to listen on (default RAIZ_HOST).")
@click.option(
    "--port", type=click.IntRange(1, 65_535), default=None, help="Port (default RAIZ_PORT, 8000)."
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=None,
    help="Worker processes (default RAIZ_WORKERS).",
)
@click.option(
    "--migrate/--no-migrate", default=None, help="Apply pending migrations first (default on)."
)
def serve(host: str | None, port: int | None, workers: int | None, migrate: bool | None) -> None:
    """Serve the API (on an embedded PostgreSQL when DATABASE_URL is unset)."""
    import uvicorn

    from app.compliance.signatures import check_active_key
    from app.config import get_settings
    from app.db import resolve_database_url
    from app.db.migrate import upgrade
    from app.main import check_settings

    settings = get_settings()
    check_settings(settings)  # before migrating and before any worker starts (and restarts)
    url = resolve_database_url(settings)
    if settings.auto_migrate if migrate is None else migrate:
        # as the schemas' owner when RAIZ_MIGRATION_DATABASE_URL is set
        upgrade(settings.migration_database_url or url)
    # A refusal at a worker's start-up would only restart the worker, again and again.
    run_with_database(check_active_key)
    if settings.env == "production":
        _refuse_a_privileged_serving_role()
    worker_count = settings.workers if workers is None else workers
    # Worker processes read the resolved URL (the embedded server's socket) from here.
    os.environ["DATABASE_URL"] = url
    # ... and serve as DATABASE_URL's role only: the owner's URL is not passed on to them.
    os.environ.pop("RAIZ_MIGRATION_DATABASE_URL", None)
    if worker_count > 1 and "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        metrics_dir = settings.data_dir.resolve() / "prometheus"
        shutil.rmtree(metrics_dir, ignore_errors=True)
        metrics_dir.mkdir(parents=True)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    click.echo(
        f"raiz: serving on http://{host or settings.host}:{port or settings.port} "
        f"({worker_count} worker{'s' if worker_count > 1 else ''}; "
        f"database {'embedded' if settings.database_url is None else 'external'})",
        err=True,
    )
    uvicorn.run(
        "app.main:create_app",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        workers=worker_count,
        log_config=None,
        timeout_graceful_shutdown=10,
    )


def _refuse_a_privileged_serving_role() -> None:
    """Production serves as a role that can neither drop the append-only tables nor disable
    their triggers: not a superuser, not their owner (docs/operations.md, database roles)."""
    from app.config import ConfigurationError
    from app.db.roles import serving_role_problem

    async def work(database: Database, settings: Settings) -> str | None:
        return await serving_role_problem(database)

    problem = run_with_database(work)
    if problem is not None:
        raise ConfigurationError(
            f"refusing to serve in production: {problem}: it could drop the append-only tables "
            "or disable their triggers; serve as a member of raiz_service and migrate with "
            "RAIZ_MIGRATION_DATABASE_URL (docs/operations.md, database roles)"
        )


@main.group()
def db() -> None:
    """Database schema management."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Apply every pending migration."""
    from app.config import get_settings
    from app.db import resolve_database_url
    from app.db.migrate import upgrade

    settings = get_settings()
    upgrade(settings.migration_database_url or resolve_database_url(settings))
    click.echo("database is up to date", err=True)


@db.command("restore-drill")
@click.option(
    "--source",
    default=None,
    metavar="URL",
    help="Database to back up, never written to (default: RAIZ_MIGRATION_DATABASE_URL, "
    "else DATABASE_URL: a role that can read every table).",
)
@click.option(
    "--scratch",
    default=None,
    metavar="URL",
    help="A database on the server to restore to, where the drill creates and drops its "
    "scratch database (default: the source server's `postgres` database); a superuser, "
    "and the roles of ops/deploy/roles.sql must exist there.",
)
@click.option("--keep", is_flag=True, help="Keep the restored copy (its name is printed).")
@click.option(
    "--dump-file",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Keep the backup in this file (default: a private temporary file, deleted).",
)
@jobs_option("verify-all's worker processes on the copy.")
def db_restore_drill(
    source: str | None, scratch: str | None, keep: bool, dump_file: Path | None, jobs: int
) -> None:
    """Back up the database (pg_dump), restore it into a scratch database (pg_restore, one
    transaction), reconcile the ledger and verify every round there, and compare the copy
    with the source: every table's rows, sequences, balances, the latest checkpoint, the
    migration heads, owners, grants and triggers.  Exit 1 listing each difference or failure.
    """
    from app.compliance.audit import few_collections
    from app.config import get_settings
    from app.db import resolve_database_url
    from app.db.restore_drill import DrillCannotRun, run_drill, until_terminated
    from app.logging import configure_logging

    settings = get_settings()
    configure_logging(settings.log_level, json=settings.log_json)
    source_url = source or settings.migration_database_url or resolve_database_url(settings)
    scratch_url = scratch or _on_database(source_url, "postgres")
    try:
        with few_collections():
            report = asyncio.run(
                until_terminated(
                    run_drill(
                        source_url, scratch_url, settings, keep=keep, dump_file=dump_file, jobs=jobs
                    )
                )
            )
    except DrillCannotRun as error:
        click.echo(f"error: restore drill: {error}", err=True)
        sys.exit(EXIT_CANNOT_RUN)
    except (asyncio.CancelledError, KeyboardInterrupt):
        # SIGTERM or SIGINT: the drill stopped its tool, dropped its copy, removed its dump
        click.echo("error: restore drill: stopped before it finished", err=True)
        sys.exit(EXIT_CANNOT_RUN)
    for line in report.lines():
        click.echo(line)
    if not report.ok:
        sys.exit(1)


def _on_database(url: str, database: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(database=database).render_as_string(hide_password=False)


@main.group()
def users() -> None:
    """User administration."""


NEW_PASSWORD = click.option(
    "--password",
    prompt=True,
    hide_input=True,
    confirmation_prompt=True,
    envvar="RAIZ_NEW_USER_PASSWORD",
    help="Prompted for when omitted (or read from RAIZ_NEW_USER_PASSWORD).",
)
"""A new user's password, or a new password (never on the command line if avoidable)."""


@users.command("create")
@click.option("--username", required=True)
@NEW_PASSWORD
@click.option(
    "--role",
    type=click.Choice(["player", "compliance", "operator"]),
    default="player",
    show_default=True,
)
def users_create(username: str, password: str, role: str) -> None:
    """Create a user with a role (bootstraps the first operator)."""
    from app.accounts.service import AccountService
    from app.errors import AppError

    async def work(database: Database, settings: Settings) -> str:
        async with database.session() as session:
            user = await AccountService(session, settings).create_user(username, password, role)
            return str(user.id)

    try:
        user_id = run_with_database(work)
    except AppError as exc:
        click.echo(f"error: {exc.code}: {exc.message}", err=True)
        sys.exit(2)
    click.echo(user_id)


@users.command("set-password")
@click.option("--username", required=True)
@NEW_PASSWORD
def users_set_password(username: str, password: str) -> None:
    """Give a user a new password and revoke every token of theirs (a player who lost their
    password, once who they are has been checked); prints how many tokens were revoked."""
    from app.accounts.service import AccountService
    from app.errors import AppError

    async def work(database: Database, settings: Settings) -> int:
        async with database.session() as session:
            return await AccountService(session, settings).set_password(username, password)

    try:
        revoked = run_with_database(work)
    except AppError as exc:
        click.echo(f"error: {exc.code}: {exc.message}", err=True)
        sys.exit(2)
    click.echo(f"password set; {revoked} token(s) revoked")


REASON = click.option(
    "--reason", required=True, help="Why (kept with the change for good; at most 500 characters)."
)


@users.command("suspend")
@click.option("--username", required=True)
@REASON
def users_suspend(username: str, reason: str) -> None:
    """Suspend an account: it cannot log in, its tokens stop working, it cannot sit or open a
    table, and its seats at tables that have not started are given up with their entries
    refunded (as POST /admin/users/{id}/suspend)."""
    from app.accounts.suspension import SuspensionService
    from app.errors import AppError
    from app.rng_api import RngServices
    from app.tables.runtime import TableRuntime
    from app.tables.suspended import SuspendedSeats

    async def work(database: Database, settings: Settings) -> tuple[int, int]:
        async with database.session() as session:
            service = SuspensionService(session)
            user_id = await service.user_id_of(username)
            change = await service.suspend(user_id, _reason(reason), None)
            await session.commit()
        runtime = TableRuntime(settings, RngServices.from_settings(settings), lambda _: None)
        released = await SuspendedSeats(database, runtime).release(user_id)
        return change.revoked_tokens, released

    try:
        revoked, released = run_with_database(work)
    except AppError as exc:
        click.echo(f"error: {exc.code}: {exc.message}", err=True)
        sys.exit(2)
    click.echo(f"suspended; {revoked} token(s) revoked, {released} seat(s) given up and refunded")


@users.command("reinstate")
@click.option("--username", required=True)
@REASON
def users_reinstate(username: str, reason: str) -> None:
    """Lift an account's suspension (as POST /admin/users/{id}/reinstate)."""
    from app.accounts.suspension import SuspensionService
    from app.errors import AppError

    async def work(database: Database, settings: Settings) -> None:
        async with database.session() as session:
            service = SuspensionService(session)
            user_id = await service.user_id_of(username)
            await service.reinstate(user_id, _reason(reason), None)
            await session.commit()

    try:
        run_with_database(work)
    except AppError as exc:
        click.echo(f"error: {exc.code}: {exc.message}", err=True)
        sys.exit(2)
    click.echo("reinstated")


def _reason(reason: str) -> str:
    """The reason as the API accepts it (its schema; ``validation_error`` otherwise)."""
    import msgspec

    from app.accounts.models import SUSPENSION_REASON_MAX_LENGTH
    from app.accounts.schemas import SuspensionRequest
    from app.errors import ValidationFailed

    try:
        return msgspec.convert({"reason": reason}, SuspensionRequest).reason
    except msgspec.ValidationError:
        raise ValidationFailed(
            f"The reason must have 1 to {SUSPENSION_REASON_MAX_LENGTH} characters, not only "
            "blanks, and no NUL character.",
            details={"field": "reason"},
        ) from None


@main.group("ledger")
def ledger_group() -> None:
    """Wallet ledger audits."""


@ledger_group.command("reconcile")
def ledger_reconcile() -> None:
    """Check that every centavo is accounted for; exit 1 listing each problem.

    Balances sum to zero per currency, each balance equals its entries, versions are
    contiguous, every transfer is balanced, closed escrows are zero with no later entry,
    settlements add up.
    """
    from ledger.reconcile import ReconcileReport, reconcile

    async def work(database: Database, settings: Settings) -> ReconcileReport:
        return await reconcile(database.engine)

    report = run_with_database(work)
    for problem in report.problems:
        click.echo(f"{problem.check}: {problem.message}")
    click.echo(report.summary(), err=not report.ok)
    if not report.ok:
        sys.exit(1)


@main.group("deadlines")
def deadlines_group() -> None:
    """Durable timers a failing handler parked (``failed``): list them, put them back."""


@deadlines_group.command("failed")
def deadlines_failed() -> None:
    """List parked deadlines (id, table, kind, token, due time, attempts); exit 1 if any."""
    from app.timers.runner import failed_deadlines

    async def work(database: Database, settings: Settings) -> list[str]:
        async with database.session() as session:
            return [
                f"{d.id}\t{d.table_id}\t{d.kind}\t{d.token}\t{d.due_at.isoformat()}\t{d.attempts}"
                for d in await failed_deadlines(session)
            ]

    lines = run_with_database(work)
    for line in lines:
        click.echo(line)
    click.echo(f"{len(lines)} failed deadline(s)", err=True)
    if lines:
        sys.exit(1)


@deadlines_group.command("retry")
@click.argument("ids", nargs=-1, type=int)
@click.option("--all", "every", is_flag=True, help="Every failed deadline.")
def deadlines_retry(ids: tuple[int, ...], every: bool) -> None:
    """Put failed deadlines back in the queue (after fixing what made them fail).

    Each keeps its due time, so the next sweep fires it, and a deadline whose table has moved
    on is found stale and does nothing.
    """
    from app.timers.runner import retry_failed_deadlines

    if bool(ids) == every:
        raise click.UsageError("name deadline ids, or --all")

    async def work(database: Database, settings: Settings) -> list[int]:
        async with database.session() as session:
            requeued = await retry_failed_deadlines(session, None if every else ids)
            await session.commit()
            return requeued

    requeued = run_with_database(work)
    for deadline_id in requeued:
        click.echo(deadline_id)
    missing = sorted(set(ids) - set(requeued))
    click.echo(f"{len(requeued)} deadline(s) re-queued", err=True)
    if missing:
        click.echo(f"error: not failed deadlines: {', '.join(map(str, missing))}", err=True)
        sys.exit(2)


@main.command()
@click.option(
    "--players", type=click.IntRange(2, 10), default=4, show_default=True, help="Bots at the table."
)
@click.option(
    "--entry-cents",
    type=click.IntRange(0, 100_000_000),
    default=500,
    show_default=True,
    help="Entry fee per seat, in centavos.",
)
@click.option(
    "--lives", type=click.IntRange(1, 20), default=3, show_default=True, help="Lives per player."
)
@click.option(
    "--deposit-cents",
    type=click.IntRange(0, 100_000_000),
    default=2_000,
    show_default=True,
    help="What the operator deposits to each bot first.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Bots' tie-breaks (the cards still come from the audited RNG).",
)
@click.option(
    "--keep-server", is_flag=True, help="Leave the API running after the match (until Ctrl-C)."
)
def demo(
    *,
    players: int,
    entry_cents: int,
    lives: int,
    deposit_cents: int,
    seed: int,
    keep_server: bool,
) -> None:
    """Watch bots play a whole match through the API, then check the money and the seeds.

    Starts ``raiz serve`` on a free loopback port (on the embedded database unless
    DATABASE_URL is set), creates an operator and bot players, funds them, seats them at
    an entry table, lets them play over HTTP and WebSocket, and prints every round, the
    payout, every balance and each round's seed verification. Not for production.
    """
    from app.demo.run import DemoOptions, run_demo

    if deposit_cents < entry_cents:
        raise click.BadParameter("must cover the entry", param_hint="--deposit-cents")
    status = run_demo(
        DemoOptions(
            players=players,
            entry_cents=entry_cents,
            lives=lives,
            deposit_cents=deposit_cents,
            seed=seed,
            keep_server=keep_server,
        ),
        click.echo,
    )
    sys.exit(status)


def _register_game_commands() -> None:
    from app.games.cli import make_simulate_command, rules_group
    from app.games.simulate import stream_chance_factory
    from rng.streams import derive_stream

    main.add_command(rules_group)
    main.add_command(make_simulate_command(stream_chance_factory(derive_stream)))


_register_game_commands()


def _register_audit_commands() -> None:
    from app.compliance.cli import audit_group

    main.add_command(audit_group)


_register_audit_commands()


if __name__ == "__main__":
    main()
