"""``raiz audit``: verify rounds, export dispute bundles, sign checkpoints."""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from app.compliance.audit import AuditReport
    from app.compliance.bundle import BundleReport
    from app.config import Settings
    from app.db import Database

__all__ = ("audit_group", "jobs_option")


def jobs_option(help_text: str) -> Any:
    """``-j/--jobs``: how many worker processes verify rounds (``verify-all``, the drill)."""
    return click.option(
        "-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help=help_text
    )


def _run(work: Any) -> Any:
    from app.cli import run_with_database

    return run_with_database(work)


def _round_id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a round id (a UUID)") from None


@click.group("audit")
def audit_group() -> None:
    """Compliance audits: verification, dispute bundles, checkpoints."""


def _service(session: Any, settings: Settings) -> Any:
    from app.compliance.service import ComplianceService
    from app.rng_api import RngServices

    rng = RngServices.from_settings(settings).for_session(session)
    return ComplianceService(session, settings, rng)


@audit_group.command("verify-round")
@click.argument("round_id")
def verify_round_command(round_id: str) -> None:
    """Verify one finished round; exit 1 naming the first bad item and why."""
    from app.compliance.access import cli_actor, record_access
    from app.errors import AppError

    target = _round_id(round_id)

    async def work(database: Database, settings: Settings) -> BundleReport:
        async with database.session() as session:
            report = await _service(session, settings).verify(target)
            record_access(
                session,
                actor=cli_actor(),
                action="verify_round",
                target=str(target),
                details={"ok": report.ok},
            )
            await session.commit()
            return report

    try:
        report = _run(work)
    except AppError as error:
        click.echo(f"error: {error.code}: {error.message}", err=True)
        sys.exit(2)
    if report.ok:
        click.echo(f"PASS round {round_id}")
        for outcome in report.rounds:
            for note in outcome.notes:
                click.echo(f"note: {note}")
        return
    click.echo(f"FAIL round {report.failed_round or round_id}: {report.failure}")
    sys.exit(1)


@audit_group.command("verify-all")
@jobs_option("Worker processes verifying the tables (all in one database snapshot).")
def verify_all_command(jobs: int) -> None:
    """Verify every finished round, every match's money and every checkpoint; print rounds/s.

    Exit 1 listing each failure.
    """
    from app.compliance.audit import few_collections, verify_all

    async def work(database: Database, settings: Settings) -> AuditReport:
        return await verify_all(database, settings, jobs=jobs)

    with few_collections():
        report = _run(work)
    for where, failure in report.failures:
        click.echo(f"FAIL {where}: {failure}")
    click.echo(report.summary())
    if not report.ok:
        sys.exit(1)


@audit_group.command("export-round")
@click.argument("round_id")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="File to write (default: round-<id>.json).",
)
def export_round_command(round_id: str, output: Path | None) -> None:
    """Write the dispute bundle of a round: everything needed to verify it offline."""
    from app.compliance.access import cli_actor, record_access
    from app.errors import AppError

    target = _round_id(round_id)
    path = output or Path(f"round-{target}.json")
    # Before the export is read and recorded in the access log, not after.
    folder = path.parent.resolve()
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise click.BadParameter(f"cannot write in {str(folder)!r}", param_hint="--output")

    async def work(database: Database, settings: Settings) -> dict[str, Any]:
        async with database.session() as session:
            bundle = await _service(session, settings).bundle(target)
            record_access(
                session, actor=cli_actor(), action="export_round", target=str(target), details={}
            )
            await session.commit()
            return bundle

    try:
        bundle = _run(work)
    except AppError as error:
        click.echo(f"error: {error.code}: {error.message}", err=True)
        sys.exit(2)
    try:
        path.write_text(json.dumps(bundle, ensure_ascii=False), encoding="utf-8")
    except OSError as error:
        click.echo(f"error: cannot write {path}: {error.strerror or error}", err=True)
        sys.exit(2)
    click.echo(f"wrote {path} ({len(bundle['rounds'])} rounds); verify it offline with:")
    click.echo(f"  python -m app.compliance.verify_bundle {path}")


@audit_group.command("checkpoint")
def checkpoint_command() -> None:
    """Sign a Merkle checkpoint over every finished round now."""
    from app.compliance.access import cli_actor
    from app.compliance.checkpoints import make_checkpoint
    from app.compliance.loader import checkpoint_dict

    async def work(database: Database, settings: Settings) -> dict[str, Any]:
        async with database.session() as session:
            checkpoint, _ = await make_checkpoint(
                session, settings, origin="cli", created_by=cli_actor()
            )
            data = checkpoint_dict(checkpoint)
            await session.commit()
            return data

    data = _run(work)
    click.echo(json.dumps(data))
