"""Crash test: a multi-worker service is SIGKILLed (master and every worker at once) in the
middle of a load of bot-played tables, restarted on the same database, and nothing is lost:
the ledger reconciles, every round verifies, no deadline is left behind, every centavo is
where it should be, and the bots reconnect and finish their matches."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.clients.bot_player import ActionStats
from app.demo.server import ServeProcess, free_port
from tests.integration.live.support import (
    FAST_TIMERS,
    LIVE_ENV,
    Person,
    check_deadlines_once,
    check_money,
    close_all,
    connect,
    create_table,
    deadline_report,
    deposit,
    get_table,
    person,
    play_match,
    settle_deadlines,
    take_seat,
)
from tests.live import ROOT

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

TABLES = 4
"""Concurrent 4-seat tables under load when the service dies."""
WORKERS = 2
DEPOSIT_CENTS = 2_000
ENTRY_CENTS = 500
ACTIONS_BEFORE_KILL = 12 * TABLES
"""Accepted actions (all tables together) before the kill: every match is well under way."""
DOWN_S = 2.5
"""How long the service stays dead: longer than a turn timer, so some come due meanwhile."""
MATCH_TIMEOUT_S = 240.0


def group_members(group: int) -> list[int]:
    """Pids of the live (non-zombie) processes of process group ``group``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def kill_service(server: ServeProcess) -> list[int]:
    """SIGKILL the master and every worker (one signal to the process group); return the
    pids that were killed once none of them is left running."""
    assert server.process is not None
    group = server.process.pid
    members = group_members(group)
    os.killpg(group, signal.SIGKILL)
    server.kill()  # reaps the master and closes its log
    deadline = time.monotonic() + 10
    while group_members(group):
        assert time.monotonic() < deadline, f"still running: {group_members(group)}"
        time.sleep(0.05)
    return members


def run_cli(database_url: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``raiz <arguments>`` against the test database, as an operator would run it."""
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *arguments],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url, "RAIZ_ENV": "test"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def server_env(database_url: str) -> dict[str, str]:
    return {
        **LIVE_ENV,
        "RAIZ_LOG_LEVEL": "INFO",
        "DATABASE_URL": database_url,
        "RAIZ_ENV": "test",
        "RAIZ_PASSWORD_COST_LOG2": "10",
        "RAIZ_DEAL_DELAY_S": "0",
    }


async def test_kill_9_under_load_loses_nothing_and_the_load_resumes(database_url, tmp_path):
    """Four R$ 5.00 tables, sixteen bots, two workers; SIGKILL to the whole service once
    the matches are under way; down past the turn timers; a new service on the same
    database and port. Then every match finishes, every balance is right to the centavo,
    the wallets, escrows and fees add up to the deposits, no action was applied twice, no
    deadline is overdue, failed or fired twice, and ``raiz ledger reconcile`` and
    ``raiz audit verify-all`` pass."""
    port = free_port()
    first = ServeProcess(
        env=server_env(database_url),
        port=port,
        workers=WORKERS,
        log_path=tmp_path / "first.log",
        cwd=ROOT,
    )
    base = first.start()
    people: list[Person] = []
    db = await connect(database_url)
    playing: list[asyncio.Future[Any]] = []
    second: ServeProcess | None = None
    try:
        operator = await person(database_url, base, "operator", "operator", record=False)
        people.append(operator)
        groups: list[list[Person]] = []
        for table_number in range(TABLES):
            group = [
                await person(database_url, base, f"t{table_number}p{seat}", record=False)
                for seat in range(4)
            ]
            people.extend(group)
            groups.append(group)
            for player in group:
                await deposit(base, operator, player, DEPOSIT_CENTS)
        tables = []
        for group in groups:
            table = await create_table(
                base,
                group[0],
                entry_cents=ENTRY_CENTS,
                options={"lives": 2, **FAST_TIMERS},
            )
            for player in group:
                await take_seat(base, table["id"], player)
            tables.append(table)
        ids = [table["id"] for table in tables]

        stats = ActionStats()
        playing = [
            asyncio.ensure_future(
                play_match(
                    [base],
                    table["id"],
                    group,
                    timeout_s=MATCH_TIMEOUT_S,
                    tie_break=10 * number,
                    stats=stats,
                )
            )
            for number, (table, group) in enumerate(zip(tables, groups, strict=True))
        ]
        async with asyncio.timeout(60):
            while sum(stats.by_type.values()) < ACTIONS_BEFORE_KILL:
                await asyncio.sleep(0.05)

        killed = kill_service(first)
        assert len(killed) >= 1 + WORKERS, killed  # the master and every worker
        running_at_kill = {
            str(row["id"])
            for row in await db.fetch(
                "SELECT id FROM game.tables WHERE id = ANY($1::uuid[]) AND status = 'running'",
                ids,
            )
        }
        assert running_at_kill, "the kill came after every match had ended"
        applied_at_kill = await db.fetchval("SELECT count(*) FROM game.table_actions")
        await asyncio.sleep(DOWN_S)
        restarted_at = await db.fetchval("SELECT now()")
        overdue = [
            row["id"]
            for row in await db.fetch(
                "SELECT id FROM game.deadlines WHERE status = 'pending' AND due_at < now()"
            )
        ]

        second = ServeProcess(
            env=server_env(database_url),
            port=port,
            workers=WORKERS,
            log_path=tmp_path / "second.log",
            cwd=ROOT,
        )
        second.start()
        finals = await asyncio.wait_for(asyncio.gather(*playing), MATCH_TIMEOUT_S)

        # the load resumed: the bots of interrupted matches reconnected and played on
        assert await db.fetchval("SELECT count(*) FROM game.table_actions") > applied_at_kill
        assert stats.reconnects >= 4 * len(running_at_kill), (stats.reconnects, running_at_kill)
        # the only failures are lost connections (no 5xx): each was retried, same action id
        assert all(hasattr(httpx, name) for name in stats.failures), stats.failures
        for table, group, views in zip(tables, groups, finals, strict=True):
            assert all(view["status"] == "finished" for view in views), table["id"]
            await check_money(base, await get_table(base, table["id"], operator), group)

        # no deadline left behind: everything due fired (the overdue ones included), once
        await settle_deadlines(db, ids, timeout_s=30)
        now = await db.fetchval("SELECT now()")
        for table_id in ids:
            check_deadlines_once(await deadline_report(db, table_id), now)
        assert not await db.fetchval(
            "SELECT count(*) FROM game.deadlines WHERE status = 'failed' "
            "OR (status = 'pending' AND due_at <= now())"
        )
        # every deadline overdue while the service was down was handled after the restart:
        # fired, or stale when a reconnected bot's move beat the first sweep to it
        late = await db.fetch(
            "SELECT id, status, handled_at FROM game.deadlines WHERE id = ANY($1::bigint[])",
            overdue,
        )
        assert len(late) == len(overdue)
        for row in late:
            assert row["status"] in ("fired", "stale"), dict(row)
            assert row["handled_at"] >= restarted_at, dict(row)

        # no action applied twice: each accepted action id is one logged input, and back
        for table_id in ids:
            logged = await db.fetchval(
                "SELECT count(*) FROM game.round_log l JOIN game.rounds r ON r.id = l.round_id "
                "WHERE r.table_id = $1::uuid AND l.kind = 'input' "
                "AND l.body->'source' ? 'action_id'",
                table_id,
            )
            distinct = await db.fetchval(
                "SELECT count(DISTINCT (l.body->'source'->>'user', "
                "l.body->'source'->>'action_id')) "
                "FROM game.round_log l JOIN game.rounds r ON r.id = l.round_id "
                "WHERE r.table_id = $1::uuid AND l.kind = 'input' "
                "AND l.body->'source' ? 'action_id'",
                table_id,
            )
            accepted = await db.fetchval(
                "SELECT count(*) FROM game.table_actions WHERE table_id = $1::uuid", table_id
            )
            assert logged == distinct == accepted, (table_id, logged, distinct, accepted)

        # every centavo: wallets + escrows + fees = deposits; escrows closed at zero
        balances = {
            row["type"]: int(row["total"])
            for row in await db.fetch(
                "SELECT type, sum(balance_cents) AS total FROM ledger.accounts GROUP BY type"
            )
        }
        deposits = sum(player.deposit_cents for player in people)
        assert balances["cash_in"] == -deposits, balances
        assert balances.get("table_escrow", 0) == 0, balances
        fees = sum(
            table["result"]["fee_cents"]
            for table in [await get_table(base, table_id, operator) for table_id in ids]
        )
        assert balances["house_revenue"] == fees, balances
        assert balances["player_wallet"] + fees == deposits, balances
    finally:
        for task in playing:
            task.cancel()
        await asyncio.gather(*playing, return_exceptions=True)
        first.kill()
        if second is not None:
            second.stop()
        await db.close()
        await close_all(people)

    reconcile = run_cli(database_url, "ledger", "reconcile")
    assert reconcile.returncode == 0, reconcile.stdout + reconcile.stderr
    verify = run_cli(database_url, "audit", "verify-all")
    assert verify.returncode == 0, verify.stdout + verify.stderr
