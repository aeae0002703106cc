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
EXCLUDED_OPERATIONS = ["logout", "revokeUserTokens"]


async def test_schemathesis_finds_no_server_error_and_no_schema_violation(settings, tmp_path):
    await create_user(settings, "fuzz_operator", role="operator")
    with live_server(settings.database_url, log_path=tmp_path / "server.log") as base:
        token = httpx.post(
            f"{base}/auth/login",
            json={"username": "fuzz_operator", "password": DEFAULT_PASSWORD},
        ).json()["token"]
        command = [
            str(Path(sys.executable).with_name("schemathesis")),
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
