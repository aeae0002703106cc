"""``RemoteBotPlayer`` without a server: one move per step, the same move again only when
it could not be delivered."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from app.clients import bot_player
from app.clients.bot_player import RemoteBotPlayer
from app.games import new_match, resolve_options
from app.games.views import player_view

pytestmark = pytest.mark.asyncio


def _deciding_view(step: int) -> dict[str, Any]:
    """A table view in which seat 1 (not the dealer) must decide."""
    match = new_match(resolve_options("cacheta-raiz"), 4)
    while (request := match.pending_chance()) is not None:
        match.apply_chance(0 if request.kind == "first_dealer" else list(range(request.size)))
    assert match.round is not None and match.round.dealer == 0
    return {
        "step": step,
        "status": "running",
        "you": {"match_seat": 1, "spectator": False},
        "game_view": player_view(match, 1),
    }


class Server:
    """Answers action posts; the first ``down`` attempts fail as if the server were away."""

    def __init__(self, down: int) -> None:
        self.down = down
        self.posts: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if self.down:
            self.down -= 1
            raise httpx.ConnectError("connection refused", request=request)
        self.posts.append(json.loads(request.content))
        return httpx.Response(200, json={**_deciding_view(99), "status": "finished"})


async def test_a_move_is_sent_once_per_step_and_resent_only_if_undelivered(monkeypatch):
    monkeypatch.setattr(bot_player, "RETRY_DELAYS_S", (0.0, 0.0))
    server = Server(down=3)  # the first post and both of its retries fail
    async with httpx.AsyncClient(transport=httpx.MockTransport(server)) as http:
        bot = RemoteBotPlayer(http, "http://raiz.test", "token", "table")
        view = _deciding_view(step=7)
        assert await bot._handle(view) is None
        assert server.posts == [] and bot.stats.errors == 3
        # the same step again (after a reconnection): the same move, the same action id
        final = await bot._handle(view)
        assert final is not None and final["status"] == "finished"
        assert len(server.posts) == 1
        assert server.posts[0]["action_id"] == "s7-decide"
        assert server.posts[0]["action"]["type"] == "decide"
        assert "seat" not in server.posts[0]["action"]
        # delivered: neither that step nor an older one is acted on again
        assert await bot._handle(view) is None
        assert await bot._handle(_deciding_view(step=6)) is None
        assert len(server.posts) == 1
