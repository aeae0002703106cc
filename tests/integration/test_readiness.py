"""``GET /health/ready`` checks the schema too: a database whose migrations are missing or
behind this code's is not ready (503, with a machine-readable reason); the revisions go to
the log, not to the public caller."""

from __future__ import annotations

import json

import anyio
import asyncpg
import pytest
from alembic.script import ScriptDirectory
from litestar import Litestar
from litestar.testing import AsyncTestClient
from prometheus_client import REGISTRY

from app.db.migrate import alembic_config, schema_revisions, upgrade
from app.main import create_app
from tests.conftest import make_settings

pytestmark = pytest.mark.asyncio

READY = {"status": "ok", "database": "ok", "schema": "ok"}


def _app(url: str) -> Litestar:
    return create_app(make_settings(url, run_scheduler=False))


def _logged(capfd: pytest.CaptureFixture[str], event: str) -> list[dict]:
    err = capfd.readouterr().err
    entries = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    return [entry for entry in entries if entry["event"] == event]


def _one_migration_short(url: str) -> str:
    """Migrate every branch but stop the game branch one revision before its head; that
    revision."""
    script = ScriptDirectory.from_config(alembic_config(url))
    game_head = next(head for head in script.get_heads() if head.startswith("game_"))
    previous = script.get_revision(game_head).down_revision
    assert isinstance(previous, str)
    upgrade(url, previous)
    for head in script.get_heads():
        if head != game_head:
            upgrade(url, head)
    return previous


async def test_a_migrated_database_is_ready(client):
    response = await client.get("/health/ready")
    assert response.status_code == 200
    assert response.json() == READY


def _ready_count(kind: str) -> float:
    labels = {"app_name": "raiz", "method": "GET", "path": "/health/ready", "status_code": "503"}
    return REGISTRY.get_sample_value(f"raiz_http_requests{kind}_total", labels) or 0.0


async def test_a_database_never_migrated_is_not_ready(empty_database, capfd):
    capfd.readouterr()
    before = {kind: _ready_count(kind) for kind in ("", "_error")}
    async with AsyncTestClient(app=_app(empty_database)) as client:
        response = await client.get("/health/ready")
    assert response.status_code == 503
    # "not ready" is the probe working, not a server error (the 5xx alerts count those)
    assert {kind: _ready_count(kind) - before[kind] for kind in before} == {"": 1, "_error": 0}
    assert response.json() == {"status": "unavailable", "database": "ok", "schema": "missing"}
    [logged] = _logged(capfd, "schema_not_ready")
    assert logged["schema"] == "missing" and logged["recorded"] == []
    assert logged["expected"] == sorted(schema_revisions().heads)


async def test_a_half_migrated_database_is_not_ready_until_migrated(empty_database, capfd):
    short_of = await anyio.to_thread.run_sync(_one_migration_short, empty_database)
    capfd.readouterr()
    async with AsyncTestClient(app=_app(empty_database)) as client:
        behind = await client.get("/health/ready")
        assert behind.status_code == 503
        assert behind.json() == {"status": "unavailable", "database": "ok", "schema": "outdated"}
        assert short_of not in behind.text  # the revisions are the operator's, in the log
        [logged] = _logged(capfd, "schema_not_ready")
        assert logged["schema"] == "outdated" and short_of in logged["recorded"]
        assert set(logged["expected"]) - set(logged["recorded"]) == {
            head for head in schema_revisions().heads if head.startswith("game_")
        }
        await anyio.to_thread.run_sync(upgrade, empty_database)
        # the same process is ready once the migrations are applied
        after = await client.get("/health/ready")
    assert after.status_code == 200 and after.json() == READY


async def test_a_database_with_one_branch_only_is_not_ready(empty_database):
    await anyio.to_thread.run_sync(upgrade, empty_database, "ledger@head")
    async with AsyncTestClient(app=_app(empty_database)) as client:
        response = await client.get("/health/ready")
    assert response.status_code == 503
    assert response.json()["schema"] == "outdated"


async def test_a_database_migrated_by_a_newer_release_is_ready(client, database_url):
    # Rolling deploy: migrations run first and are additive, so the release still running
    # stays ready on the newer schema (docs/operations.md).
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "UPDATE public.alembic_version SET version_num = 'game_9999' "
            "WHERE version_num LIKE 'game_%'"
        )
    finally:
        await connection.close()
    response = await client.get("/health/ready")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "schema": "newer"}


async def test_the_probe_does_not_read_the_migration_scripts(client, monkeypatch):
    # This code's heads are read once per process, not from disk at every probe.
    def no_disk(*_: object, **__: object) -> ScriptDirectory:
        raise AssertionError("the readiness probe read the migration scripts")

    monkeypatch.setattr(ScriptDirectory, "from_config", no_disk)
    for _ in range(2):
        response = await client.get("/health/ready")
        assert response.status_code == 200 and response.json() == READY
