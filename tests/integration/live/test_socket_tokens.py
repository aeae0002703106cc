"""A table socket refused for its token, against the real server (uvicorn): the client gets
close code 4401 and the reason ``not_authenticated`` (the code a revoked token gets on an
open socket), not a bare HTTP 403 handshake nor a server error; the bot client stops."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import websockets
from websockets.exceptions import ConnectionClosed

from app.clients.bot_player import BotPlayerError, RemoteBotPlayer, websocket_url
from tests.integration.live.support import LIVE_ENV, close_all, person
from tests.live import live_server

pytestmark = pytest.mark.asyncio


async def test_a_socket_with_a_bad_token_is_closed_with_4401(database_url, tmp_path):
    with live_server(database_url, env=LIVE_ENV, log_path=tmp_path / "server.log") as base:
        operator = await person(database_url, base, "operator", "operator")
        try:
            table_id = str(uuid.uuid4())
            for token in ("not-a-token", ""):
                url = websocket_url(base, table_id, token)
                async with asyncio.timeout(10), websockets.connect(url) as socket:
                    with pytest.raises(ConnectionClosed) as closed:
                        message = await socket.recv()
                        pytest.fail(f"a bad token received {message!r}")
                assert closed.value.rcvd is not None
                assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (
                    4401,
                    "not_authenticated",
                )
            bot = RemoteBotPlayer(operator.http, base, "not-a-token", table_id)
            with pytest.raises(BotPlayerError):
                await bot.play(timeout_s=10)
            assert bot.stats.reconnects == 0
        finally:
            await close_all([operator])
