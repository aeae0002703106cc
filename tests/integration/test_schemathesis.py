"""Schemathesis against the live /schema of a running service: no 5xx, no schema violation."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.helpers import DEFAULT_PASSWORD, create_user
from tests.live import live_server

pytestmark = pytest.mark.asyncio

CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
        "negative_data_rejection",
    ]
)
# Operations that would end the fuzzer's own session.
EXCLUDED_OPERATIONS = ["logout", "revokeUserTokens", "excludeMyself"]


def _fuzz(base: str, token: str, tmp_path: Path, parameters: dict[str, str] | None = None) -> None:
    """Schemathesis over every operation of the live schema as the bearer of ``token``, with
    the path parameters in ``parameters`` fixed (an id the fuzzer could not guess)."""
    config = tmp_path / "schemathesis.toml"
    config.write_text(
        "[parameters]\n" + "".join(f'"path.{k}" = "{v}"\n' for k, v in (parameters or {}).items())
    )
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(config),
        "run",
        f"{base}/schema/openapi.json",
        "--checks",
        CHECKS,
        "--max-examples",
        os.environ.get("RAIZ_FUZZ_EXAMPLES", "40"),
        "--seed",
        "20261129",
        "--header",
        f"Authorization: Bearer {token}",
        "--generation-database",
        "none",
        "--no-color",
        "--workers",
        "1",
        "--phases",
        "examples,coverage,fuzzing",
        *[arg for op in EXCLUDED_OPERATIONS for arg in ("--exclude-operation-id", op)],
    ]
    result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def _login(base: str, username: str) -> str:
    response = httpx.post(
        f"{base}/auth/login", json={"username": username, "password": DEFAULT_PASSWORD}
    )
    assert response.status_code == 200, response.text
    return str(response.json()["token"])


def _call(
    method: str, url: str, token: str, headers: dict[str, str] | None = None, **kwargs
) -> dict:
    headers = {"Authorization": f"Bearer {token}", **(headers or {})}
    response = httpx.request(method, url, headers=headers, **kwargs)
    assert response.status_code < 300, response.text
    return response.json() if response.content else {}


async def test_schemathesis_finds_no_server_error_and_no_schema_violation(settings, tmp_path):
    await create_user(settings, "fuzz_operator", role="operator")
    with live_server(settings.database_url, log_path=tmp_path / "server.log") as base:
        _fuzz(base, _login(base, "fuzz_operator"), tmp_path)


async def test_schemathesis_as_a_player_seated_at_a_running_table(settings, tmp_path):
    """The player's side: as an operator the fuzzer meets 403 on every player route, and
    without a table id 404 on every table route.  Here a funded player fuzzes every route with
    ``table_id`` fixed to a running match they sit at (actions, client seeds, heartbeats, the
    view, leave, cancel and start all reach the table)."""
    await create_user(settings, "fuzz_operator", role="operator")
    users = {name: await create_user(settings, name) for name in ("fuzz_player", "fuzz_rival")}
    with live_server(settings.database_url, log_path=tmp_path / "server.log") as base:
        operator = _login(base, "fuzz_operator")
        tokens = {name: _login(base, name) for name in users}
        for user_id in users.values():
            _call(
                "POST",
                f"{base}/admin/wallets/{user_id}/deposits",
                operator,
                json={"amount_cents": 100_000},
                headers={"Idempotency-Key": f"fuzz-{user_id}"},
            )
        table = _call(
            "POST",
            f"{base}/tables",
            tokens["fuzz_rival"],
            json={"seat_count": 2, "entry_cents": 500},
        )
        for name in ("fuzz_rival", "fuzz_player"):
            _call("POST", f"{base}/tables/{table['id']}/seat", tokens[name])
        assert (
            _call("GET", f"{base}/tables/{table['id']}", tokens["fuzz_player"])["status"]
            == "running"
        )
        _fuzz(base, tokens["fuzz_player"], tmp_path, {"table_id": table["id"]})
