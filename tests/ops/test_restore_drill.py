"""The restore drill (``raiz db restore-drill``, docs/operations.md "Backups") on real data:
finished matches with payouts, a refunded table, a withdrawal, a signed checkpoint.

The source is built once for the module and every drill reads it (the drill never writes to
its source: the last test checks that nothing in it changed).  The negative tests break the
restored copy through the drill's hooks (a superuser session with the triggers off, as a bad
restore would leave it) and expect the drill to name the difference.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from app.compliance.checkpoints import make_checkpoint
from app.config import Settings
from app.db import Database
from app.db.drill_facts import compare_facts, read_facts
from app.db.restore_drill import SCRATCH_PREFIX, DrillHooks, DrillReport, run_drill
from app.main import create_app
from tests.conftest import _admin_sql, _drop, _with_database, make_settings
from tests.helpers import auth
from tests.integration.compliance.helpers import play_match
from tests.integration.tables.helpers import create_table, player


def _settings(url: str) -> Settings:
    return make_settings(
        url, allow_timer_overrides=True, presence_grace_s=3600, scheduler_poll_interval_s=0.05
    )


async def _fill(url: str) -> None:
    """Two finished matches (entries, fee, payout), a cancelled table (its refunds), a
    withdrawal, and a checkpoint signed over every round."""
    settings = _settings(url)
    async with AsyncTestClient(app=create_app(settings)) as client:
        first = await play_match(client, settings, players=2, lives=1, names="alpha")
        await play_match(
            client, settings, players=3, lives=1, names="bravo", operator_token=first["operator"]
        )
        (_, alice), (bob_id, bob) = [
            await player(client, settings, f"charlie{i}", 1_000, first["operator"])
            for i in range(2)
        ]
        table = await create_table(client, alice, seat_count=3, entry_cents=300)
        for token in (alice, bob):
            response = await client.post(f"/tables/{table['id']}/seat", headers=auth(token))
            assert response.status_code == 201, response.text
        response = await client.post(
            f"/tables/{table['id']}/cancel", json={"reason": "drill"}, headers=auth(alice)
        )
        assert response.status_code == 200, response.text
        withdrawal = await client.post(
            f"/admin/wallets/{bob_id}/withdrawals",
            json={"amount_cents": 250},
            headers={**auth(first["operator"]), "Idempotency-Key": f"wd-{uuid.uuid4()}"},
        )
        assert withdrawal.status_code == 201, withdrawal.text
    database = Database.connect(url, settings)
    try:
        async with database.session() as session:
            await make_checkpoint(session, settings, origin="cli")
            await session.commit()
    finally:
        await database.dispose()


@pytest.fixture(scope="module")
async def source(pg_server_url: str, template_database: str) -> AsyncIterator[str]:
    name = f"raiz_t_{uuid.uuid4().hex[:12]}"
    await _admin_sql(pg_server_url, f'CREATE DATABASE "{name}" TEMPLATE "{template_database}"')
    try:
        url = _with_database(pg_server_url, name)
        await _fill(url)
        yield url
    finally:
        await _admin_sql(pg_server_url, _drop(name))


async def _superuser(url: str, *statements: str) -> None:
    """``statements`` on the database at ``url``, triggers and foreign keys off."""
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("SET session_replication_role = replica")
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()


def _breaking(*statements: str) -> Callable[[str], Awaitable[None]]:
    async def hook(url: str) -> None:
        await _superuser(url, *statements)

    return hook


async def _drill(source: str, server: str, **hooks: Any) -> DrillReport:
    return await run_drill(
        source, _with_database(server, "postgres"), _settings(source), hooks=DrillHooks(**hooks)
    )


async def _scratch_databases(server: str) -> list[str]:
    connection = await asyncpg.connect(_with_database(server, "postgres"))
    try:
        rows = await connection.fetch(
            "SELECT datname FROM pg_database WHERE starts_with(datname, $1)", SCRATCH_PREFIX
        )
    finally:
        await connection.close()
    return [row[0] for row in rows]


async def _facts(url: str) -> Any:
    connection = await asyncpg.connect(url)
    try:
        async with connection.transaction(isolation="repeatable_read", readonly=True):
            return await read_facts(connection)
    finally:
        await connection.close()


# --- the drill passes on a faithful restore --------------------------------------------------
async def test_the_backup_restores_reconciles_verifies_and_matches(source, pg_server_url):
    before = await _facts(source)
    report = await _drill(source, pg_server_url)
    assert report.ok, report.lines()
    facts = await _facts(source)
    assert compare_facts(before, facts) == []  # the drill wrote nothing to its source
    # the data set is what the docs' figures say it is
    assert facts.tables["game.round_results"][0] >= 2
    assert facts.tables["ledger.settlements"][0] == 2
    assert facts.checkpoint is not None and "root" in facts.checkpoint
    assert facts.heads and all(head.split("_")[0] for head in facts.heads)
    assert sum(total for total, _ in facts.balances.values()) == 0
    assert report.tables == len(facts.tables) >= 30
    assert report.rows == facts.rows
    assert report.dump_bytes > 0
    assert "verify-all ok" in report.verify and "0 rounds" not in report.verify.split(" of ")[0]
    assert report.reconcile.startswith("ledger reconcile: ok")
    assert list(report.seconds) == ["backup", "restore", "compare", "reconcile", "verify-all"]
    assert report.scratch.rsplit("/", 1)[1] not in await _scratch_databases(pg_server_url)


async def test_a_write_after_the_snapshot_is_neither_in_the_backup_nor_a_difference(
    source, pg_server_url
):
    """The service keeps writing during a drill: the source's facts are read in the snapshot
    pg_dump dumps, so the copy matches them (a write after it is in neither)."""
    marker = f"drill-{uuid.uuid4().hex[:8]}"

    async def write(url: str) -> None:
        connection = await asyncpg.connect(url)
        try:
            await connection.execute(
                "INSERT INTO game.access_log (actor, role, action, target, details, at) "
                "VALUES ('test', 'compliance', 'export_round', $1, '{}', now())",
                marker,
            )
        finally:
            await connection.close()

    before = await _facts(source)
    report = await _drill(source, pg_server_url, after_snapshot=write)
    assert report.ok, report.lines()
    after = await _facts(source)
    assert after.tables["game.access_log"][0] == before.tables["game.access_log"][0] + 1


# --- the drill catches a copy that differs ---------------------------------------------------
async def test_rows_missing_from_the_copy_are_a_difference(source, pg_server_url):
    report = await _drill(
        source,
        pg_server_url,
        after_restore=_breaking(
            "DELETE FROM game.access_log WHERE id = (SELECT max(id) FROM game.access_log)"
        ),
    )
    assert not report.ok
    (problem,) = [p for p in report.problems if "game.access_log" in p]
    assert "rows in the source" in problem
    assert report.scratch.rsplit("/", 1)[1] not in await _scratch_databases(pg_server_url)


async def test_a_changed_row_in_the_copy_is_a_difference(source, pg_server_url):
    report = await _drill(
        source,
        pg_server_url,
        after_restore=_breaking(
            "UPDATE game.users SET username = username || 'x' "
            "WHERE username = (SELECT min(username) FROM game.users)"
        ),
    )
    assert report.problems == [
        f"table game.users: {(await _facts(source)).tables['game.users'][0]} rows in both, "
        "but different contents"
    ]


async def test_a_tampered_ledger_entry_fails_the_comparison_and_the_reconciliation(
    source, pg_server_url
):
    report = await _drill(
        source,
        pg_server_url,
        after_restore=_breaking(
            "UPDATE ledger.entries SET amount_cents = amount_cents + 1, "
            "balance_after_cents = balance_after_cents + 1 "
            "WHERE id = (SELECT max(id) FROM ledger.entries)"
        ),
    )
    assert "table ledger.entries: " in "\n".join(report.problems)
    assert any(problem.startswith("reconcile: ") for problem in report.problems), report.lines()


async def test_a_tampered_round_signature_fails_verify_all(source, pg_server_url):
    report = await _drill(
        source,
        pg_server_url,
        after_restore=_breaking(
            "UPDATE game.round_signatures SET signature = sha512(signature) "
            "WHERE round_id = (SELECT min(round_id::text)::uuid FROM game.round_signatures)"
        ),
    )
    assert any(problem.startswith("verify-all: ") for problem in report.problems), report.lines()
    assert any("game.round_signatures" in problem for problem in report.problems)


async def test_a_different_checkpoint_root_is_a_difference(source, pg_server_url):
    report = await _drill(
        source,
        pg_server_url,
        after_restore=_breaking("UPDATE game.checkpoints SET root = sha256(root)"),
    )
    assert any(problem.startswith("latest checkpoint: ") for problem in report.problems)
    assert any(problem.startswith("verify-all: ") for problem in report.problems)


async def test_a_different_balance_is_a_difference(source, pg_server_url):
    report = await _drill(
        source,
        pg_server_url,
        after_restore=_breaking(
            "UPDATE ledger.accounts SET balance_cents = balance_cents + 7 "
            "WHERE type = 'house_revenue'"
        ),
    )
    assert any(problem.startswith("balance BRL: ") for problem in report.problems), report.lines()


async def test_a_missing_migration_head_is_a_difference(source, pg_server_url):
    report = await _drill(
        source,
        pg_server_url,
        after_restore=_breaking(
            "DELETE FROM public.alembic_version WHERE version_num LIKE 'game_%'"
        ),
    )
    assert any(problem.startswith("alembic heads: ") for problem in report.problems)


async def test_a_sequence_behind_is_a_difference(source, pg_server_url):
    """A sequence restored behind its table hands out ids already taken: the next insert
    fails, or worse."""
    report = await _drill(
        source,
        pg_server_url,
        after_restore=_breaking("SELECT setval('ledger.entries_id_seq', 1)"),
    )
    assert (
        [p for p in report.problems if p.startswith("sequence ")]
        == [p for p in report.problems if "ledger.entries_id_seq" in p]
        != []
    )


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # what --no-privileges would have lost
        ("REVOKE INSERT ON game.rounds FROM raiz_service", "relation game.rounds "),
        (
            "REVOKE UPDATE (balance_cents) ON ledger.accounts FROM raiz_service",
            "column ledger.accounts.balance_cents ",
        ),
        # an append-only guard left disabled after a data-only load
        ("ALTER TABLE game.seats DISABLE TRIGGER seats_entry_of_table", "trigger game.seats."),
        ("ALTER TABLE ledger.entries DISABLE TRIGGER USER", "trigger ledger.entries."),
        # a constraint lost
        (
            "ALTER TABLE ledger.accounts DROP CONSTRAINT ck_accounts_balance_not_negative",
            "constraint ledger.accounts.ck_accounts_balance_not_negative",
        ),
        # what --no-owner would have done
        ("ALTER TABLE game.rounds OWNER TO raiz_service", "relation game.rounds "),
    ],
)
async def test_lost_grants_owners_triggers_and_constraints_are_differences(
    source, pg_server_url, statement, expected
):
    report = await _drill(source, pg_server_url, after_restore=_breaking(statement))
    assert report.problems, statement
    assert all(problem.startswith("structure in the ") for problem in report.problems), (
        report.lines()
    )
    assert any(expected in problem for problem in report.problems), report.lines()


async def test_a_restore_that_fails_is_reported_and_leaves_no_database(source, pg_server_url):
    report = await _drill(source, pg_server_url, before_restore=_breaking("CREATE SCHEMA ledger"))
    assert not report.ok
    (problem,) = report.problems
    assert problem.startswith("restore: pg_restore exited with 1: ")
    assert 'schema "ledger" already exists' in problem
    assert "reconcile" not in report.seconds
    assert report.scratch.rsplit("/", 1)[1] not in await _scratch_databases(pg_server_url)


# --- the command ------------------------------------------------------------------------------
def _raiz(source: str, *arguments: str) -> Any:
    from click.testing import CliRunner

    from app.cli import main
    from app.config import get_settings

    get_settings.cache_clear()
    try:
        return CliRunner().invoke(
            main,
            ["db", "restore-drill", "--source", source, *arguments],
            env={"DATABASE_URL": source, "RAIZ_ENV": "test", "RAIZ_ALLOW_FIXED_DECKS": "true"},
        )
    finally:
        get_settings.cache_clear()


def test_the_command_prints_the_report_and_keeps_the_copy_when_asked(source, pg_server_url):
    import asyncio

    result = _raiz(source, "--keep")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-1] == "restore drill ok"
    (kept,) = [line for line in lines if line.startswith("kept the copy: ")]
    name = kept.rsplit("/", 1)[1]
    assert name.startswith(SCRATCH_PREFIX)
    asyncio.run(_admin_sql(pg_server_url, _drop(name)))


def test_the_command_exits_3_when_the_source_is_unreachable():
    result = _raiz("postgresql://postgres@127.0.0.1:1/raiz")
    assert result.exit_code == 3, result.output
    assert "cannot connect to the source" in result.output


# --- an interrupted drill leaves nothing behind ------------------------------------------------
def test_sigterm_stops_the_drill_and_leaves_no_database_no_dump_no_tool(
    source, pg_server_url, tmp_path
):
    # SIGTERM (systemd stopping the drill's unit, `timeout`) while pg_restore runs: the tool
    # is killed, the scratch database dropped, the dump's folder removed, exit 3.  The drill
    # is held stopped while the signal is sent, so it cannot have finished first; pg_restore
    # stays stopped, so only the drill's kill can end it.
    import asyncio
    import contextlib
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.live import ROOT

    before = set(asyncio.run(_scratch_databases(pg_server_url)))
    environment = {
        **os.environ,
        "DATABASE_URL": source,
        "RAIZ_ENV": "test",
        "RAIZ_ALLOW_FIXED_DECKS": "true",
        "TMPDIR": str(tmp_path),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "db", "restore-drill", "--source", source],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        tool = ""
        while not tool and process.poll() is None and time.monotonic() < deadline:
            found = subprocess.run(
                ["pgrep", "-P", str(process.pid), "pg_restore"],
                capture_output=True,
                text=True,
                check=False,
            )
            tool = found.stdout.strip()
        assert tool, "the drill ran no pg_restore"
        os.kill(int(tool), signal.SIGSTOP)
        process.send_signal(signal.SIGSTOP)
        created = set(asyncio.run(_scratch_databases(pg_server_url))) - before
        assert len(created) == 1 and list(tmp_path.glob("raiz-restore-drill-*/source.dump"))
        process.send_signal(signal.SIGTERM)
        process.send_signal(signal.SIGCONT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        alive = False
        if tool:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(tool), signal.SIGKILL)  # (a stopped process cannot ignore it)
                alive = True
    assert process.returncode == 3, (out, err)
    assert err.strip().splitlines()[-1] == "error: restore drill: stopped before it finished"
    assert "Traceback" not in err
    assert not created & set(asyncio.run(_scratch_databases(pg_server_url)))
    assert list(tmp_path.iterdir()) == []
    assert not alive, "pg_restore outlived the drill"


async def test_the_next_drill_removes_what_an_interrupted_one_left_after_a_day(
    source, pg_server_url, tmp_path, monkeypatch
):
    # A drill killed outright (SIGKILL, a crash) leaves its scratch database and dump folder:
    # the next drill removes those older than a day and names the younger ones (another drill
    # may be running) without touching them.
    import datetime as dt
    import tempfile

    from app.db.restore_drill import FOLDER_PREFIX, STAMP_FORMAT

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    young_stamp = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=23)).strftime(STAMP_FORMAT)
    old = f"{SCRATCH_PREFIX}20200101000000_0ld0ld"
    young = f"{SCRATCH_PREFIX}{young_stamp}_y0ung0"
    for name in (old, young):
        await _admin_sql(pg_server_url, f'CREATE DATABASE "{name}"')
    old_folder = tmp_path / f"{FOLDER_PREFIX}20200101000000_abc"
    young_folder = tmp_path / f"{FOLDER_PREFIX}{young_stamp}_def"
    unrelated = tmp_path / f"{FOLDER_PREFIX}not-a-drill-folder"
    for folder in (old_folder, young_folder, unrelated):
        folder.mkdir()
        (folder / "source.dump").write_bytes(b"sealed seeds")
    try:
        report = await _drill(source, pg_server_url)
        assert report.ok, report.problems
        remaining = await _scratch_databases(pg_server_url)
        assert old not in remaining and young in remaining
        assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
            [young_folder.name, unrelated.name]
        )
        # (only these: a young leftover of another drill is noted too)
        dropped, noted, removed = [
            note for note in report.notes if old in note or young in note or "removed" in note
        ]
        assert dropped.startswith(f"dropped {old}, left by a drill interrupted on ")
        assert noted.startswith(f"{young} exists: another drill is running")
        assert removed.startswith(f"removed {old_folder}, left by a drill interrupted on ")
        assert f"note: {noted}" in report.lines()
    finally:
        for name in (old, young):
            await _admin_sql(pg_server_url, _drop(name))
