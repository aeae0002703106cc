"""Sockets that stop reading or vanish without a close frame do not slow the players: against
the real server (uvicorn), a match is played by bots while stalled and dropped table
sockets (spectators and a player's second device) stay attached to the table."""

from __future__ import annotations

from socket import SO_RCVBUF, SOL_SOCKET

import pytest
import websockets

from app.clients.bot_player import ActionStats, websocket_url
from tests.integration.live.support import (
    FAST_TIMERS,
    LIVE_ENV,
    close_all,
    create_table,
    deposit,
    person,
    play_match,
    take_seat,
)
from tests.live import live_server

pytestmark = pytest.mark.asyncio

STALLED = 12
DROPPED = 12


async def test_stalled_and_dropped_sockets_do_not_slow_the_players(database_url, tmp_path):
    with live_server(database_url, env=LIVE_ENV, log_path=tmp_path / "server.log") as base:
        operator = await person(database_url, base, "operator", "operator")
        players = [await person(database_url, base, f"player{i}") for i in range(2)]
        watcher = await person(database_url, base, "watcher")
        stalled = []
        try:
            for player in players:
                await deposit(base, operator, player, 1_000)
            table = await create_table(
                base, players[0], seat_count=2, entry_cents=500, options={"lives": 4, **FAST_TIMERS}
            )
            await take_seat(base, table["id"], players[0])
            url = websocket_url(base, table["id"], watcher.token)
            # stalled: the client stops reading after one frame (TCP backpressure on the
            # server's sends); one of them is the first player's second device
            for index in range(STALLED):
                token = players[0].token if index == 0 else watcher.token
                socket = await websockets.connect(
                    websocket_url(base, table["id"], token), max_queue=1, max_size=None
                )
                raw = socket.transport.get_extra_info("socket")
                raw.setsockopt(SOL_SOCKET, SO_RCVBUF, 4096)  # a few views fill it
                stalled.append(socket)
            # dropped: the TCP connection is cut without a close frame
            for _ in range(DROPPED):
                socket = await websockets.connect(url, max_size=None)
                socket.transport.abort()
            await take_seat(base, table["id"], players[1])
            stats = ActionStats()
            finals = await play_match([base], table["id"], players, timeout_s=120, stats=stats)
            assert all(final["status"] == "finished" for final in finals)
            assert stats.errors == 0, stats.failures
            assert len(stats.latencies_s) > 10
            latencies = sorted(stats.latencies_s)
            p95 = latencies[int(0.95 * (len(latencies) - 1))]
            assert p95 < 2.0, latencies  # about 0.1 s on the CI machine
        finally:
            for socket in stalled:
                socket.transport.abort()
            await close_all([operator, watcher, *players])
