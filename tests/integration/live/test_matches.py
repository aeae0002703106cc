"""Whole matches against the real service (``raiz serve`` in a subprocess): four bots per
table play over HTTP and WebSocket; money, results and seeds are checked afterwards."""

from __future__ import annotations

import asyncio
import copy
import uuid

import pytest

from app.clients.bot_player import BotPlayerError, RemoteBotPlayer
from tests.integration.live import leaks
from tests.integration.live.support import (
    FAST_TIMERS,
    LIVE_ENV,
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


async def test_two_tables_play_to_the_end_concurrently(database_url, tmp_path):
    """Two 4-seat R$ 5.00 tables at different fee snapshots, eight bots, one server:
    every balance is right to the centavo, every round's seed verifies and reproduces
    the logged deal, every deadline was handled once."""
    with live_server(database_url, env=LIVE_ENV, log_path=tmp_path / "server.log") as base:
        operator = await person(database_url, base, "operator", "operator")
        players = [await person(database_url, base, f"player{i}") for i in range(8)]
        for index, player in enumerate(players):
            # distinct deposits, so a payout to the wrong player cannot balance out
            await deposit(base, operator, player, 2_000 + 111 * index)
        fee_rates = []
        tables = []
        for group, fee_bps in enumerate((1_000, 1_234)):
            response = await operator.http.post(
                f"{base}/admin/fee-rates",
                json={"fee_bps": fee_bps, "reason": "live test"},
                headers=operator.headers,
            )
            assert response.status_code == 201, response.text
            fee_rates.append(fee_bps)
            tables.append(
                await create_table(
                    base,
                    players[4 * group],
                    entry_cents=500,
                    options={"lives": 3, **FAST_TIMERS},
                )
            )
        # a later change of the rate does not touch existing tables
        response = await operator.http.post(
            f"{base}/admin/fee-rates", json={"fee_bps": 2_500}, headers=operator.headers
        )
        assert response.status_code == 201, response.text
        for group, table in enumerate(tables):
            for player in players[4 * group : 4 * group + 4]:
                await take_seat(base, table["id"], player)
        finals = await asyncio.gather(
            *(
                play_match([base], table["id"], players[4 * group : 4 * group + 4])
                for group, table in enumerate(tables)
            )
        )
        db = await connect(database_url)
        try:
            for group, table in enumerate(tables):
                seated = players[4 * group : 4 * group + 4]
                assert all(view["status"] == "finished" for view in finals[group])
                final = await get_table(base, table["id"], operator)
                assert final["fee_bps"] == fee_rates[group]
                result = final["result"]
                assert result["reason"] == "last_standing"
                assert {p["user_id"] for p in result["placements"]} == {p.user_id for p in seated}
                winners = [p for p in result["placements"] if p["place"] == 1]
                assert [w["user_id"] for w in winners] == [result["winner_user_id"]]
                assert final["game_view"]["winner"] == result["winner_seat"]
                await check_money(base, final, seated)
                rounds = await check_seeds(base, operator, db, table["id"], seats=4)
                assert rounds, "at least one round was played"
            # a bot arriving late gets the final view at once; a bad token or table stops it
            late = RemoteBotPlayer(players[0].http, base, players[0].token, tables[0]["id"])
            assert (await late.play(timeout_s=10))["status"] == "finished"
            for token, table_id in (
                ("not-a-token", tables[0]["id"]),
                (operator.token, str(uuid.uuid4())),
            ):
                with pytest.raises(BotPlayerError):
                    await RemoteBotPlayer(operator.http, base, token, table_id).play(timeout_s=10)
            await settle_deadlines(db, [table["id"] for table in tables])
            now = await db.fetchval("SELECT now()")
            for group, table in enumerate(tables):
                report = await deadline_report(db, table["id"])
                check_deadlines_once(report, now)
                seated = players[4 * group : 4 * group + 4]
                assert check_timers_shown(table["id"], seated, report) > 10
        finally:
            await db.close()
            await close_all([operator, *players])


async def test_no_player_or_spectator_ever_sees_a_hidden_card_or_an_unrevealed_seed(
    database_url, tmp_path
):
    """Every HTTP body and WebSocket frame four players and a spectator received during a
    whole match, and every line of the server's (debug) log, checked against the ground
    truth of the round log, the deals and the reveals."""
    log_path = tmp_path / "server.log"
    with live_server(database_url, env=LIVE_ENV, log_path=log_path) as base:
        operator = await person(database_url, base, "operator", "operator")
        players = [await person(database_url, base, f"player{i}") for i in range(4)]
        watcher = await person(database_url, base, "watcher")
        for player in players:
            await deposit(base, operator, player, 2_000)
        table = await create_table(base, players[0], options={"lives": 4, **FAST_TIMERS})
        table_id = table["id"]
        # the spectator is watching before the first seat is taken
        watching = asyncio.create_task(spectate(base, table_id, watcher))
        await until_watching(watcher)
        for player in players:
            await take_seat(base, table_id, player)
        await play_match([base], table_id, players)
        probes = await watching
        db = await connect(database_url)
        try:
            knowledge = await leaks.rebuild(db, table_id)
            secrets = await leaks.secrets_of(db, table_id)
        finally:
            await db.close()
        final = await get_table(base, table_id, operator)
        await close_all([operator, watcher, *players])
    assert final["status"] == "finished"
    assert probes > 10
    assert len(secrets) == len(knowledge.hands) >= 2
    seat_of = {seat["user_id"]: seat["match_seat"] for seat in final["seats"]}
    checked = 0
    for player in players:
        checked += leaks.check_messages(
            player.recorder.messages, table_id, seat_of[player.user_id], knowledge, secrets
        )
    checked += leaks.check_messages(watcher.recorder.messages, table_id, None, knowledge, secrets)
    assert checked > 1_000, checked
    tokens = [who.token for who in (operator, watcher, *players)]
    # the log was read, and it is the match's (about 100 request lines; fewer since sockets
    # are no longer logged as HTTP requests, so the bound leaves room for a shorter match)
    assert leaks.check_log(log_path, secrets, tokens) > 50

    # The check is not vacuous: one card of another hand slipped into a view is caught.
    victim = players[0]
    seat = seat_of[victim.user_id]
    other = next(s for s in range(4) if s != seat)
    for message in victim.recorder.messages:
        view = leaks.table_view_of(message, table_id)
        if view and view["game_view"] and view["game_view"]["round"]:
            number = view["game_view"]["round"]["number"]
            hidden = sorted(
                set(knowledge.hands[number][other])
                - knowledge.allowed(int(view["step"]), number, seat)
            )
            if hidden:
                break
    else:
        raise AssertionError("no view to tamper with")
    tampered = copy.deepcopy(view)
    tampered["game_view"]["round"]["pile"].append(hidden[0])
    forged = leaks.Received("ws", "forged", json_dumps({"type": "view", "view": tampered}), 0)
    with pytest.raises(AssertionError, match="may not know"):
        leaks.check_messages([forged], table_id, seat, knowledge, secrets)
    seed_text = json_dumps({"type": "view", "view": {**view, "note": secrets[-1].spellings[0]}})
    with pytest.raises(AssertionError, match="before its reveal"):
        leaks.check_messages(
            [leaks.Received("ws", "forged", seed_text, 0)], table_id, seat, knowledge, secrets
        )


def json_dumps(value: object) -> str:
    import json

    return json.dumps(value)
