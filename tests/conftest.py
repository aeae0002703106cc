"""Shared fixtures: a real PostgreSQL, a migrated template, one fresh database per test.

``TEST_DATABASE_URL`` names a server to use (CI: the machine's PostgreSQL on
127.0.0.1:5432); without it an embedded PostgreSQL starts under ``.raiz/test-pg``.
Every integration test gets its own database cloned from a migrated template, so tests
are isolated and can run in any order.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
from hypothesis import settings as hypothesis_settings
from sqlalchemy.engine import make_url

os.environ.setdefault("RAIZ_ENV", "test")
# pgserver logs from an atexit hook, after pytest has closed the captured streams.
logging.getLogger("pgserver").setLevel(logging.WARNING)

from app.config import Settings  # noqa: E402

# No per-example deadline (Hypothesis's default is 200 ms): the properties are about results,
# and one pause of a loaded machine (CI's two cores run the whole suite) in any example
# failed a test as "unreliable test timings".
hypothesis_settings.register_profile("raiz", deadline=None)
hypothesis_settings.load_profile("raiz")

ROOT = Path(__file__).resolve().parent.parent


def _server_url() -> str:
    configured = os.environ.get("TEST_DATABASE_URL")
    if configured:
        return configured
    from app.db.embedded import start_embedded

    return start_embedded(ROOT / ".raiz" / "test-pg")


def _with_database(url: str, name: str) -> str:
    return (
        make_url(url)
        .set(drivername="postgresql", database=name)
        .render_as_string(hide_password=False)
    )


async def _admin(url: str) -> asyncpg.Connection:
    return await asyncpg.connect(_with_database(url, "postgres"))


async def _admin_sql(url: str, *statements: str) -> None:
    """Run ``statements`` (CREATE and DROP DATABASE) on the server's ``postgres`` database."""
    admin = await _admin(url)
    try:
        for statement in statements:
            await admin.execute(statement)
    finally:
        await admin.close()


def _drop(name: str) -> str:
    return f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "ledger_tampering: the test corrupts the ledger on purpose; the database_url "
        "fixture skips its reconciliation before dropping the database",
    )
    config.addinivalue_line(
        "markers",
        "round_tampering: the test corrupts rounds on purpose; the database_url fixture "
        "skips its verify-all before dropping the database",
    )


async def _ledger_problems(url: str) -> list[str]:
    """Problems ``raiz ledger reconcile`` would report on the database at ``url``."""
    from sqlalchemy.ext.asyncio import create_async_engine
    from sqlalchemy.pool import NullPool

    from app.db.engine import async_url
    from ledger.reconcile import reconcile

    engine = create_async_engine(async_url(url), poolclass=NullPool)
    try:
        report = await reconcile(engine)
    finally:
        await engine.dispose()
    return [f"{problem.check}: {problem.message}" for problem in report.problems]


async def _round_problems(url: str) -> list[str]:
    """What ``raiz audit verify-all`` would report on the database at ``url`` (nothing to do,
    and no cost beyond one query, when no round has finished)."""
    from app.compliance.audit import verify_all
    from app.db import Database

    connection = await asyncpg.connect(url)
    try:
        finished = await connection.fetchval("SELECT EXISTS (SELECT 1 FROM game.round_results)")
    finally:
        await connection.close()
    if not finished:
        return []
    settings = make_settings(url)
    database = Database.connect(url, settings)
    try:
        report = await verify_all(database, settings)
    finally:
        await database.dispose()
    return [f"{where}: {failure}" for where, failure in report.failures]


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    """URL of the PostgreSQL server the tests use (any database on it)."""
    return _server_url()


@pytest.fixture
async def empty_database(pg_server_url: str) -> AsyncIterator[str]:
    """A database with no migration applied (its URL), dropped after the test."""
    name = f"raiz_empty_{uuid.uuid4().hex[:10]}"
    await _admin_sql(pg_server_url, f'CREATE DATABASE "{name}"')
    try:
        yield _with_database(pg_server_url, name)
    finally:
        await _admin_sql(pg_server_url, _drop(name))


@pytest.fixture(scope="session")
async def template_database(pg_server_url: str) -> AsyncIterator[str]:
    """A database migrated to the latest revision, cloned by every test."""
    import anyio

    from app.db.migrate import upgrade

    name = f"raiz_tpl_{os.getpid()}"
    await _admin_sql(pg_server_url, _drop(name), f'CREATE DATABASE "{name}"')
    url = _with_database(pg_server_url, name)
    await anyio.to_thread.run_sync(upgrade, url)
    yield name
    await _admin_sql(pg_server_url, _drop(name))


@pytest.fixture
async def database_url(
    request: pytest.FixtureRequest, pg_server_url: str, template_database: str
) -> AsyncIterator[str]:
    """A fresh, fully migrated database for one test, dropped afterwards.

    Before the drop the ledger is reconciled: a test that leaves money unaccounted for
    fails here, so the whole suite ends with every test database reconciling clean
    (tests marked ``ledger_tampering`` break the ledger on purpose and are skipped).  Every
    finished round is verified too (``raiz audit verify-all``), so every round the suite's
    matches produce is proven to re-execute from its seed (``round_tampering`` skips it).
    """
    name = f"raiz_t_{uuid.uuid4().hex[:12]}"
    await _admin_sql(pg_server_url, f'CREATE DATABASE "{name}" TEMPLATE "{template_database}"')
    url = _with_database(pg_server_url, name)
    yield url
    problems: list[str] = []
    try:
        if request.node.get_closest_marker("ledger_tampering") is None:
            problems = await _ledger_problems(url)
        if request.node.get_closest_marker("round_tampering") is None:
            problems += await _round_problems(url)
    finally:
        await _admin_sql(pg_server_url, _drop(name))
    if problems:
        pytest.fail(
            "ledger reconciliation or round verification failed after the test:\n"
            + "\n".join(problems)
        )


def make_settings(database_url: str | None, **overrides: object) -> Settings:
    """Test settings: fast password hashing, no pauses, fixed decks allowed."""
    values: dict[str, object] = {
        "env": "test",
        "database_url": database_url,
        "password_cost_log2": 10,
        "deal_delay_s": 0,
        "log_json": True,
        "allow_fixed_decks": True,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def settings(database_url: str) -> Settings:
    """Settings bound to this test's database."""
    return make_settings(database_url)


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[object]:
    """An HTTP client talking to a freshly started app (lifespan included)."""
    from litestar.testing import AsyncTestClient

    from app.main import create_app

    async with AsyncTestClient(app=create_app(settings)) as test_client:
        yield test_client


@pytest.fixture
def cli(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A click runner for ``raiz`` commands on this test's database (``DATABASE_URL``)."""
    from click.testing import CliRunner

    from app.config import get_settings

    monkeypatch.setenv("DATABASE_URL", database_url)
    get_settings.cache_clear()
    yield CliRunner()
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def anyio_backend() -> Iterator[str]:
    yield "asyncio"
