"""``raiz demo`` end to end, as a newcomer runs it (a subprocess, its own server)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import asyncpg
import pytest

from tests.live import ROOT

pytestmark = pytest.mark.asyncio


def _run_demo(
    env: dict[str, str], *args: str, timeout_s: float = 300
) -> subprocess.CompletedProcess:
    environment = {**os.environ, **env}
    environment.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "demo", *args],
        cwd=ROOT,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


async def test_raiz_demo_plays_a_match_and_checks_money_and_seeds(database_url, tmp_path):
    started = time.monotonic()
    done = _run_demo(
        {
            "DATABASE_URL": database_url,
            "RAIZ_DATA_DIR": str(tmp_path),
            "RAIZ_ENV": "development",
            "RAIZ_PASSWORD_COST_LOG2": "10",
        },
        "--players",
        "4",
        "--entry-cents",
        "500",
        "--lives",
        "3",
        "--seed",
        "7",
    )
    elapsed = time.monotonic() - started
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    print(f"raiz demo took {elapsed:.1f} s\n{out}")
    assert "timers are shortened for this demo" in out
    assert "All checks passed." in out
    assert "FAIL" not in out and "WRONG" not in out
    table_id = re.search(r"^Table +([0-9a-f-]{36}):", out, re.MULTILINE).group(1)
    assert "4 seats, entry R$ 5.00, 3 lives, fee 10.00 %" in out
    assert "prize pool R$ 20.00 (4 x R$ 5.00); fee R$ 2.00" in out
    assert "net prize R$ 18.00 to" in out
    balances = re.findall(r"^  (\w+) +R\$ 20\.00 +R\$ (\d+\.\d\d) .* ok$", out, re.MULTILINE)
    assert sorted(amount for _, amount in balances) == ["15.00", "15.00", "15.00", "33.00"]
    winner = re.search(r"^Result +(\w+) wins", out, re.MULTILINE).group(1)
    assert dict(balances)[winner] == "33.00"
    rounds = re.findall(r"^ +(\d+)  dealer ", out, re.MULTILINE)
    commitments = re.findall(r"^  round +(\d+)  commitment ([0-9a-f]{64})$", out, re.MULTILINE)
    passes = re.findall(r"^ +PASS: the seed matches its commitment", out, re.MULTILINE)
    assert rounds and [n for n, _ in commitments] == rounds and len(passes) == len(rounds)
    assert "Ledger    reconcile OK" in out

    db = await asyncpg.connect(database_url)
    try:
        status = await db.fetchval("SELECT status FROM game.tables WHERE id = $1::uuid", table_id)
        stored = await db.fetch(
            "SELECT number, commitment FROM game.rounds WHERE table_id = $1::uuid ORDER BY number",
            table_id,
        )
    finally:
        await db.close()
    assert status == "finished"
    assert [(str(row["number"]), row["commitment"]) for row in stored] == commitments


async def test_raiz_demo_refuses_production():
    done = _run_demo({"RAIZ_ENV": "production"}, timeout_s=60)
    assert done.returncode == 2
    assert "refuses to run with RAIZ_ENV=production" in done.stdout + done.stderr
