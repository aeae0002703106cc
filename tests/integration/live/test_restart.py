"""Deadlines survive a crash: the server is SIGKILLed with deadlines pending, stays down
past their due times, and a new server on the same database fires each one once."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import subprocess
import sys
import uuid

import pytest

from app.clients.bot_player import RemoteBotPlayer
from app.demo.server import ServeProcess, free_port
from tests.integration.live.support import (
    FAST_TIMERS,
    LIVE_ENV,
    balance,
    check_deadlines_once,
    check_money,
    check_seeds,
    close_all,
    connect,
    create_table,
    deadline_report,
    deposit,
    fetch_log,
    get_table,
    person,
    play_match,
    settle_deadlines,
    take_seat,
    wait_for_status,
)
from tests.live import ROOT

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

FILL_DEADLINE_S = 600
"""C's fill deadline: so long that only the test brings it forward (to before the restart),
whatever time the setup takes on a slow machine."""
A_TIMERS = {**FAST_TIMERS, "decision_timeout_ms": 5_000, "turn_timeout_ms": 5_000}
"""Table A's timers outlast the moment between its players' stopping and the kill (they
end when the test makes them due, with the server down)."""


async def test_pending_deadlines_fire_once_after_a_crash_and_matches_finish(database_url, tmp_path):
    """Three tables when the server is killed (SIGKILL to its process group):

    - A: a match whose players stopped acting, its turn (or decision) timer pending;
    - B: a match whose bots keep playing, so they lose the server mid-move and must
      reconnect and retry;
    - C: an open table with two paid seats and its fill deadline pending.

    With the server down, the test makes A's timer and C's fill deadline due (as time would:
    a real 10 s fill deadline could pass before the kill on a slow machine), then a new
    server starts on the same database and port: each overdue deadline fires at once, exactly
    once (A's timer plays for the absent player, C is cancelled and refunded), A's players
    come back and both matches finish with the money right, every round's seed verifies,
    and ``raiz ledger reconcile`` passes.
    """
    port = free_port()
    first = ServeProcess(
        env=_env(database_url), port=port, log_path=tmp_path / "first.log", cwd=ROOT
    )
    base = first.start()
    people = []
    try:
        operator = await person(database_url, base, "operator", "operator")
        a_players = [await person(database_url, base, f"alpha{i}") for i in range(4)]
        b_players = [await person(database_url, base, f"bravo{i}") for i in range(4)]
        c_players = [await person(database_url, base, f"charlie{i}") for i in range(2)]
        people = [operator, *a_players, *b_players, *c_players]
        for player in people[1:]:
            await deposit(base, operator, player, 2_000)
        table_c = await create_table(
            base, c_players[0], fill_deadline_s=FILL_DEADLINE_S, options={"lives": 3}
        )
        for player in c_players:
            await take_seat(base, table_c["id"], player)
        assert [await balance(base, p) for p in c_players] == [1_500, 1_500]
        table_a = await create_table(base, a_players[0], options={"lives": 2, **A_TIMERS})
        table_b = await create_table(base, b_players[0], options={"lives": 4, **FAST_TIMERS})
        for table, players in ((table_a, a_players), (table_b, b_players)):
            for player in players:
                await take_seat(base, table["id"], player)

        b_bots = [
            RemoteBotPlayer(player.http, base, player.token, table_b["id"], tie_break=index)
            for index, player in enumerate(b_players)
        ]
        b_playing = asyncio.gather(*(bot.play(timeout_s=120) for bot in b_bots))
        a_far_enough = asyncio.Event()

        def watch(view: dict) -> None:
            if view["status"] == "running" and view["step"] >= 15:
                a_far_enough.set()

        a_bots = [
            RemoteBotPlayer(
                player.http, base, player.token, table_a["id"], tie_break=index, on_view=watch
            )
            for index, player in enumerate(a_players)
        ]
        a_playing = asyncio.gather(*(bot.play(timeout_s=120) for bot in a_bots))
        await asyncio.wait_for(a_far_enough.wait(), 30)
        a_playing.cancel()  # A's players stop acting
        with pytest.raises(asyncio.CancelledError):
            await a_playing
        # A's claim window (if one was open) closes: a player timer runs at the kill
        await _until_player_timer(database_url, table_a["id"])
        first.kill()
        killed_at = dt.datetime.now(dt.UTC)
    except BaseException:
        first.kill()
        raise

    db = await connect(database_url)
    try:
        statuses = {
            str(row["id"]): row["status"]
            for row in await db.fetch(
                "SELECT id, status FROM game.tables WHERE id = ANY($1::uuid[])",
                [uuid.UUID(t["id"]) for t in (table_a, table_b, table_c)],
            )
        }
        assert statuses == {
            table_a["id"]: "running",
            table_b["id"]: "running",
            table_c["id"]: "open",
        }
        # A's current timer: the newest pending game deadline, the one the table shows
        a_timer = await db.fetchrow(
            "SELECT d.id, d.due_at, d.token, t.timer_kind FROM game.deadlines d "
            "JOIN game.tables t ON t.id = d.table_id AND t.timer_due_at = d.due_at "
            "WHERE d.table_id = $1::uuid AND d.kind = 'game' AND d.status = 'pending' "
            "ORDER BY d.id DESC LIMIT 1",
            table_a["id"],
        )
        assert a_timer is not None, "A has a running timer"
        fill = await db.fetchrow(
            "SELECT id, due_at FROM game.deadlines WHERE table_id = $1::uuid AND kind = 'fill'",
            table_c["id"],
        )
        assert fill["due_at"] > dt.datetime.now(dt.UTC), "C's fill deadline was ahead at the kill"
        # while the server is down, both come due (the table's own times with them)
        async with db.transaction():
            await db.execute(
                "UPDATE game.deadlines SET due_at = now() - interval '1 second'"
                " WHERE id = ANY($1::bigint[])",
                [a_timer["id"], fill["id"]],
            )
            await db.execute(
                "UPDATE game.tables SET timer_due_at = now() - interval '1 second'"
                " WHERE id = $1::uuid",
                table_a["id"],
            )
            await db.execute(
                "UPDATE game.tables SET fill_deadline_at = now() - interval '1 second'"
                " WHERE id = $1::uuid",
                table_c["id"],
            )
        overdue = {
            row["id"]: row
            for row in await db.fetch(
                "SELECT id, table_id, kind, due_at FROM game.deadlines "
                "WHERE status = 'pending' AND due_at < now()"
            )
        }
        assert {a_timer["id"], fill["id"]} <= set(overdue)

        second = ServeProcess(
            env=_env(database_url), port=port, log_path=tmp_path / "second.log", cwd=ROOT
        )
        second.start()
        try:
            # late deadlines fire at once, on the new server
            async with asyncio.timeout(10):
                while await db.fetchval(
                    "SELECT count(*) FROM game.deadlines WHERE id = ANY($1::bigint[]) "
                    "AND status = 'pending'",
                    list(overdue),
                ):
                    await asyncio.sleep(0.05)
            handled = {
                row["id"]: row
                for row in await db.fetch(
                    "SELECT id, status, due_at, handled_at FROM game.deadlines "
                    "WHERE id = ANY($1::bigint[])",
                    list(overdue),
                )
            }
            for row in handled.values():
                assert row["handled_at"] > killed_at, row
                # at once: at the due time it had, not re-armed for its duration (exact, where
                # a 3 s wall-clock bound on the new server's first sweep was a machine's speed)
                assert row["due_at"] == overdue[row["id"]]["due_at"], row
            assert handled[a_timer["id"]]["status"] == "fired"
            assert handled[fill["id"]]["status"] == "fired"
            timeouts = [
                entry
                for entry in await fetch_log(db, table_a["id"])
                if entry["kind"] == "input"
                and entry["body"].get("source", {}).get("deadline") == a_timer["id"]
            ]
            assert len(timeouts) == 1
            assert timeouts[0]["body"]["type"] == "timeout"
            assert str(timeouts[0]["body"]["token"]) == a_timer["token"]

            cancelled = await wait_for_status(base, table_c["id"], operator, "cancelled")
            assert cancelled["result"] == {"reason": "fill_deadline"}
            assert [await balance(base, p) for p in c_players] == [2_000, 2_000]

            # A's players come back; B's bots reconnect by themselves
            await play_match([base], table_a["id"], a_players, tie_break=10)
            await b_playing
            assert all(bot.stats.reconnects >= 1 for bot in b_bots)
            for table, players in ((table_a, a_players), (table_b, b_players)):
                final = await get_table(base, table["id"], operator)
                assert final["status"] == "finished"
                await check_money(base, final, players)
                await check_seeds(base, operator, db, table["id"], seats=4)
            ids = [t["id"] for t in (table_a, table_b, table_c)]
            await settle_deadlines(db, ids)
            now = await db.fetchval("SELECT now()")
            for table_id in ids:
                check_deadlines_once(await deadline_report(db, table_id), now)
        finally:
            second.stop()
    finally:
        await db.close()
        await close_all(people)

    reconcile = subprocess.run(
        [sys.executable, "-m", "app.cli", "ledger", "reconcile"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url, "RAIZ_ENV": "test"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert reconcile.returncode == 0, reconcile.stdout + reconcile.stderr


async def _until_player_timer(database_url: str, table_id: str) -> None:
    """Until the table's running timer is a player's (a decision or a turn), not a claim
    window that the scheduler is about to close."""
    db = await connect(database_url)
    try:
        async with asyncio.timeout(10):
            while await db.fetchval(
                "SELECT timer_kind FROM game.tables WHERE id = $1::uuid", table_id
            ) not in ("decision", "dealer_decision", "turn"):
                await asyncio.sleep(0.05)
    finally:
        await db.close()


def _env(database_url: str) -> dict[str, str]:
    return {
        **LIVE_ENV,
        "DATABASE_URL": database_url,
        "RAIZ_ENV": "test",
        "RAIZ_PASSWORD_COST_LOG2": "10",
        "RAIZ_DEAL_DELAY_S": "0",
    }
