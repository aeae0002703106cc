"""One table served by two server processes at once (two ``raiz serve`` on two ports, one
database), and one match on a multi-worker ``raiz serve``."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from typing import Any

import pytest

from app.clients.bot_player import ActionStats
from tests.integration.live.leaks import PRIVATE_EVENTS, table_view_of
from tests.integration.live.support import (
    FAST_TIMERS,
    LIVE_ENV,
    Person,
    check_deadlines_once,
    check_money,
    check_seeds,
    check_timers_shown,
    close_all,
    connect,
    create_table,
    deadline_report,
    deposit,
    get_table,
    person,
    play_match,
    settle_deadlines,
    spectate,
    take_seat,
    until_watching,
)
from tests.live import live_server

pytestmark = pytest.mark.asyncio

PRIVATE_ROUND_KEYS = frozenset(
    {
        "hand",
        "plain_wilds",
        "my_decision",
        "mandar_count",
        "drawn",
        "locked",
        "claimed",
        "can_close",
        "holds_two_melds",
    }
)
"""What a player's view adds to the public round (so two players' views of one step
agree on everything else)."""


def public_part(view: dict[str, Any]) -> dict[str, Any]:
    """The part of a table view every viewer of that step must see identically."""
    view = {key: value for key, value in view.items() if key not in ("you", "replayed")}
    game = view.get("game_view")
    if game is not None:
        game = {key: value for key, value in game.items() if key != "you"}
        if game.get("round") is not None:
            game["round"] = {
                key: value for key, value in game["round"].items() if key not in PRIVATE_ROUND_KEYS
            }
        view["game_view"] = game
    events = []
    for original in view["events"]:
        if original["type"] in PRIVATE_EVENTS:
            continue
        event = dict(original)
        if event["type"] == "dealt":
            event.pop("hand")
        if event["type"] == "drew_stock":
            event.pop("card", None)
        if event["type"] == "dealer_decision_started":
            event.pop("mandar_count", None)
        events.append(event)
    view["events"] = events
    return view


def check_consistent(table_id: str, people: list[Person]) -> int:
    """Every view of one step, whoever got it from whichever server, agrees on the public
    state; each WebSocket saw steps in order. Returns how many steps were compared."""
    by_step: dict[int, tuple[str, dict[str, Any]]] = {}
    for who in people:
        last_ws_step = -1
        for message in who.recorder.messages:
            view = table_view_of(message, table_id)
            if view is None:
                continue
            step = int(view["step"])
            if message.channel == "ws":
                assert step >= last_ws_step, (who.name, step, last_ws_step)
                last_ws_step = step
            public = public_part(view)
            if step in by_step:
                first_name, first = by_step[step]
                assert public == first, f"step {step}: {who.name} and {first_name} disagree"
            else:
                by_step[step] = (who.name, public)
    return len(by_step)


HANDLED = re.compile(r'"deadline_handled"')


def handled_deadlines(log_text: str) -> list[int]:
    ids = []
    for line in log_text.splitlines():
        if HANDLED.search(line):
            ids.append(int(json.loads(line)["deadline_id"]))
    return ids


async def test_one_table_on_two_server_processes(database_url, tmp_path):
    """Players 0 and 2 talk to server A, 1 and 3 to server B (HTTP and WebSocket), a
    spectator watches through each: the match completes, every view of a step agrees, each
    deadline was handled by exactly one of the processes, and the money is right."""
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    with (
        live_server(database_url, env=LIVE_ENV, log_path=logs[0]) as base_a,
        live_server(database_url, env=LIVE_ENV, log_path=logs[1]) as base_b,
    ):
        bases = [base_a, base_b]
        operator = await person(database_url, base_a, "operator", "operator")
        players = [await person(database_url, bases[i % 2], f"player{i}") for i in range(4)]
        watchers = [await person(database_url, base, f"watcher{i}") for i, base in enumerate(bases)]
        for player in players:
            await deposit(base_b, operator, player, 2_000)
        table = await create_table(base_a, players[0], options={"lives": 3, **FAST_TIMERS})
        watching = [
            asyncio.create_task(spectate(base, table["id"], watcher, probe_rng=False))
            for base, watcher in zip(bases, watchers, strict=True)
        ]
        await until_watching(*watchers)
        for index, player in enumerate(players):
            await take_seat(bases[index % 2], table["id"], player)
        finals = await play_match(bases, table["id"], players)
        await asyncio.gather(*watching)
        db = await connect(database_url)
        try:
            final = await get_table(base_b, table["id"], operator)
            assert all(view["step"] == final["step"] for view in finals)
            await check_money(base_a, final, players)
            await check_seeds(base_b, operator, db, table["id"], seats=4)
            await settle_deadlines(db, [table["id"]])
            report = await deadline_report(db, table["id"])
            check_deadlines_once(report, await db.fetchval("SELECT now()"))
            assert check_timers_shown(table["id"], [*players, *watchers], report) > 10
        finally:
            await db.close()
    steps = check_consistent(table["id"], [*players, *watchers])
    assert steps > 20
    by_server = [handled_deadlines(path.read_text()) for path in logs]
    counts = Counter(by_server[0] + by_server[1])
    assert counts and max(counts.values()) == 1, "a deadline was handled twice"
    handled = {row["id"] for row in report if row["status"] != "pending"}
    assert set(counts) == handled
    assert by_server[0] and by_server[1], "both processes fire deadlines"
    await close_all([operator, *players, *watchers])


async def test_a_match_on_a_multi_worker_server(database_url, tmp_path):
    """``raiz serve --workers 2``: uvicorn's worker processes share one port; the match
    completes and the metrics endpoint aggregates the workers."""
    env = {**LIVE_ENV, "RAIZ_DATA_DIR": str(tmp_path / "data")}
    with live_server(database_url, workers=2, env=env) as base:
        operator = await person(database_url, base, "operator", "operator")
        players = [await person(database_url, base, f"player{i}") for i in range(4)]
        for player in players:
            await deposit(base, operator, player, 1_000)
        table = await create_table(base, players[0], options={"lives": 2, **FAST_TIMERS})
        for player in players:
            await take_seat(base, table["id"], player)
        stats = ActionStats()
        await play_match([base], table["id"], players, stats=stats)
        final = await get_table(base, table["id"], operator)
        assert final["status"] == "finished"
        await check_money(base, final, players)
        metrics = (await operator.http.get(f"{base}/metrics")).text
        await close_all([operator, *players])
    # whichever worker served them, the metrics add up over both
    assert metric_sum(metrics, "raiz_tables_finished_total") == 1
    assert metric_sum(metrics, "raiz_payout_cents_total") == 1_800
    assert metric_sum(metrics, "raiz_actions_total", 'outcome="applied"') == sum(
        stats.by_type.values()
    )


def metric_sum(text: str, name: str, label: str = "") -> float:
    """The sum of a metric's samples (optionally only those with ``label``)."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith((f"{name} ", f"{name}{{")) and label in line:
            total += float(line.rsplit(" ", 1)[1])
    return total
