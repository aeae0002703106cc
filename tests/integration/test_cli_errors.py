"""``raiz`` commands that cannot run (no database, unusable settings) say why in one line and
exit 3, never with a traceback; a command's answer on stdout is not mixed with log lines."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from sqlalchemy.engine import make_url

from app.cli import EXIT_CANNOT_RUN, main
from app.config import get_settings
from tests.live import free_port

DATABASE_COMMANDS = [
    ["ledger", "reconcile"],
    ["db", "upgrade"],
    ["deadlines", "failed"],
    ["deadlines", "retry", "--all"],
    ["audit", "verify-round", "00000000-0000-0000-0000-000000000000"],
    ["audit", "export-round", "00000000-0000-0000-0000-000000000000", "-o", "/dev/null"],
    ["audit", "verify-all"],
    ["audit", "checkpoint"],
    ["users", "create", "--username", "boss", "--role", "operator", "--password", "x" * 12],
    ["users", "set-password", "--username", "boss", "--password", "x" * 12],
    ["serve", "--port", "1"],
]


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> Iterator[CliRunner]:
    monkeypatch.setenv("RAIZ_PASSWORD_COST_LOG2", "10")
    get_settings.cache_clear()
    yield CliRunner()
    get_settings.cache_clear()


def _refused(result) -> str:
    assert result.exit_code == EXIT_CANNOT_RUN, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize("command", DATABASE_COMMANDS, ids=" ".join)
def test_a_database_that_is_down_is_one_line_and_exit_3(runner, monkeypatch, command):
    url = f"postgresql://raiz:hunter2-secret@127.0.0.1:{free_port()}/raiz"
    monkeypatch.setenv("DATABASE_URL", url)
    line = _refused(runner.invoke(main, command))
    assert line.startswith("error: database unavailable (postgresql://raiz:***@127.0.0.1:")
    assert "hunter2" not in line


def test_a_database_that_does_not_exist_is_one_line_and_exit_3(runner, monkeypatch, pg_server_url):
    missing = make_url(pg_server_url).set(database="raiz_no_such_database")
    monkeypatch.setenv("DATABASE_URL", missing.render_as_string(hide_password=False))
    line = _refused(runner.invoke(main, ["ledger", "reconcile"]))
    assert line.startswith("error: database unavailable (")
    assert 'database "raiz_no_such_database" does not exist' in line


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("RAIZ_TOKEN_TTL_S", "twelve hours", "RAIZ_TOKEN_TTL_S"),
        ("RAIZ_SEED_KEYRING", "k1-not-a-keyring-but-a-secret", "RAIZ_SEED_KEYRING"),
        ("RAIZ_LOG_LEVEL", "LOUD", "RAIZ_LOG_LEVEL"),
        ("DATABASE_URL", "postgresql://raiz:pw-secret@db:99999/raiz", "DATABASE_URL"),
    ],
)
def test_unusable_settings_are_one_line_and_exit_3(runner, monkeypatch, variable, value, named):
    monkeypatch.setenv("DATABASE_URL", f"postgresql://raiz@127.0.0.1:{free_port()}/raiz")
    monkeypatch.setenv(variable, value)
    line = _refused(runner.invoke(main, ["audit", "verify-round", str(uuid.uuid4())]))
    assert line.startswith("error: configuration: ") and named in line
    assert value not in line  # a mistyped key is not echoed


def test_production_refusal_is_one_line_and_exit_3(runner, monkeypatch):
    monkeypatch.setenv("RAIZ_ENV", "production")
    monkeypatch.setenv("DATABASE_URL", "postgresql://raiz@db/raiz")
    line = _refused(runner.invoke(main, ["ledger", "reconcile"]))
    assert line.startswith("error: configuration: refusing to start in production")


def test_checkpoint_prints_only_its_json_on_stdout(cli):
    result = cli.invoke(main, ["audit", "checkpoint"])
    assert result.exit_code == 0, result.output
    checkpoint = json.loads(result.stdout)  # log lines go to stderr
    assert checkpoint["tree_size"] == 0 and checkpoint["key_id"]
    assert "compliance_checkpoint" in result.stderr


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["--port", "99999"], "--port"),  # was a traceback from the socket's bind
        (["--port", "0"], "--port"),
        (["--workers", "-1"], "--workers"),  # was served with RAIZ_WORKERS, silently
        (["--workers", "0"], "--workers"),
    ],
)
def test_serve_refuses_a_bad_port_or_worker_count_before_doing_anything(
    runner, monkeypatch, arguments, named
):
    monkeypatch.setenv("DATABASE_URL", f"postgresql://raiz@127.0.0.1:{free_port()}/raiz")
    result = runner.invoke(main, ["serve", "--no-migrate", *arguments])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{named}'" in result.output


@pytest.mark.parametrize("command", [["audit", "verify-all"], ["db", "restore-drill"]])
@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_a_bad_jobs_count_is_refused_before_doing_anything(runner, monkeypatch, command, jobs):
    monkeypatch.setenv("DATABASE_URL", f"postgresql://raiz@127.0.0.1:{free_port()}/raiz")
    result = runner.invoke(main, [*command, "--jobs", jobs])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '-j' / '--jobs'" in result.output


def _serve_until_it_stops(database_url: str, env: dict[str, str]) -> str:
    """``raiz serve --workers 2`` that must stop by itself with exit 3 and one line on
    stderr, which is returned; a server still running after 30 s fails the test."""
    import os
    import signal
    import subprocess
    import sys

    from tests.live import ROOT

    environment = {**os.environ, "DATABASE_URL": database_url, "RAIZ_ENV": "test", **env}
    environment.pop("PROMETHEUS_MULTIPROC_DIR", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--workers", "2", "--port", str(free_port())],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("raiz serve kept running (restarting workers that cannot start)")
    assert process.returncode == EXIT_CANNOT_RUN, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize("variable", ["RAIZ_SEED_KEYRING", "RAIZ_SIGNING_KEYRING"])
def test_serve_with_an_unusable_keyring_stops_at_once(database_url, variable):
    # It migrated, then every worker failed in create_app and the server restarted it
    # forever (a traceback each time); the service never exited.
    err = _serve_until_it_stops(database_url, {variable: "k1:not-base64-and-a-secret"})
    assert err.startswith(f"error: configuration: {variable}")
    assert "not-base64-and-a-secret" not in err


def test_serve_with_a_signing_key_id_registered_with_another_key_stops_at_once(database_url):
    # The worker's start-up refused it, and the server restarted the worker forever.
    import asyncio

    import asyncpg

    async def register_another_key() -> None:
        connection = await asyncpg.connect(database_url)
        try:
            await connection.execute(
                "INSERT INTO game.signing_keys (key_id, algorithm, public_key, created_at) "
                "VALUES ('dev1', 'ed25519', $1, now())",
                bytes(32),
            )
        finally:
            await connection.close()

    asyncio.run(register_another_key())
    err = _serve_until_it_stops(database_url, {})
    assert err.startswith("error: configuration: RAIZ_SIGNING_ACTIVE_KEY_ID is unusable")


def test_the_demo_without_a_database_says_so_and_exits_3(runner, monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", f"postgresql://raiz@127.0.0.1:{free_port()}/raiz")
    monkeypatch.setenv("RAIZ_DATA_DIR", str(tmp_path))
    result = runner.invoke(main, ["demo"])
    assert result.exit_code == EXIT_CANNOT_RUN, result.output
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output
    assert "error: the demo's server did not start" in result.output
    assert "error: database unavailable" in result.output  # the server's own one line


@pytest.mark.parametrize("command", [["db", "upgrade"], ["serve", "--port", "1"]])
def test_a_database_migrated_by_a_newer_release_is_one_line_and_exit_3(cli, database_url, command):
    # e.g. the previous release started again after the new one migrated the database
    import asyncio

    import asyncpg

    async def newer() -> None:
        connection = await asyncpg.connect(database_url)
        try:
            await connection.execute(
                "UPDATE public.alembic_version SET version_num = 'game_9999' "
                "WHERE version_num LIKE 'game_%'"
            )
        finally:
            await connection.close()

    asyncio.run(newer())
    line = _refused(cli.invoke(main, command))
    assert line == "error: migrations: Can't locate revision identified by 'game_9999'"


@pytest.mark.parametrize(
    "command",
    [
        ["ledger", "reconcile"],
        ["deadlines", "failed"],
        ["audit", "verify-all"],
        ["users", "create", "--username", "boss", "--role", "operator", "--password", "x" * 12],
        ["users", "set-password", "--username", "boss", "--password", "x" * 12],
    ],
    ids=" ".join,
)
def test_a_database_never_migrated_is_one_line_and_exit_3(
    runner, monkeypatch, pg_server_url, command
):
    import asyncio

    import asyncpg

    name = f"raiz_empty_{uuid.uuid4().hex[:10]}"
    admin_url = make_url(pg_server_url).set(drivername="postgresql", database="postgres")
    admin = admin_url.render_as_string(hide_password=False)

    async def admin_sql(statement: str) -> None:
        connection = await asyncpg.connect(admin)
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    asyncio.run(admin_sql(f'CREATE DATABASE "{name}"'))
    try:
        monkeypatch.setenv(
            "DATABASE_URL", admin_url.set(database=name).render_as_string(hide_password=False)
        )
        line = _refused(runner.invoke(main, command))
    finally:
        asyncio.run(admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    assert line.startswith("error: database not migrated (")
    assert line.endswith("does not exist; run `raiz db upgrade`")


def test_a_statement_timeout_is_one_line_and_exit_3_not_database_unavailable(
    runner, monkeypatch, database_url
):
    # reconcile waits for a lock another session holds, past the statement timeout
    import asyncio
    import threading

    import asyncpg

    locked, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        async def hold() -> None:
            connection = await asyncpg.connect(database_url)
            try:
                async with connection.transaction():
                    await connection.execute("LOCK TABLE ledger.accounts IN ACCESS EXCLUSIVE MODE")
                    locked.set()
                    await asyncio.get_running_loop().run_in_executor(None, release.wait, 30)
            finally:
                await connection.close()

        asyncio.run(hold())

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    try:
        assert locked.wait(10)
        monkeypatch.setenv("DATABASE_URL", database_url)
        monkeypatch.setenv("RAIZ_DB_STATEMENT_TIMEOUT_MS", "300")
        line = _refused(runner.invoke(main, ["ledger", "reconcile"]))
    finally:
        release.set()
        holder.join(30)
    assert line.startswith(
        "error: database: a statement ran past RAIZ_DB_STATEMENT_TIMEOUT_MS (300 ms)"
    )


def test_an_embedded_database_that_cannot_start_is_one_line_and_exit_3(
    runner, monkeypatch, tmp_path
):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("RAIZ_DATABASE_URL", raising=False)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("RAIZ_DATA_DIR", str(blocker / "raiz"))
    line = _refused(runner.invoke(main, ["ledger", "reconcile"]))
    assert line.startswith("error: database unavailable (the embedded database): ")
