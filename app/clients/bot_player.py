"""A bot that plays a table through the public API: HTTP for moves, WebSocket for views.

It sees exactly what a human client sees (its own view), lets the engine's heuristic bot
choose the move, and posts it with an action id derived from the view's step, so a retry
after a network error can never be applied twice.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import websockets

from app.games.bots import HeuristicBot

__all__ = ("ActionStats", "RemoteBotPlayer", "websocket_url")

TERMINAL_STATUSES = frozenset({"finished", "cancelled"})
"""Table statuses after which a bot stops."""


def websocket_url(base_url: str, table_id: str, token: str) -> str:
    """The table's WebSocket URL with the token in the query string."""
    scheme = "wss" if base_url.startswith("https") else "ws"
    host = base_url.split("://", 1)[1].rstrip("/")
    return f"{scheme}://{host}/tables/{table_id}/ws?token={token}"


@dataclass(slots=True)
class ActionStats:
    """What a bot measured: latency of each accepted action, refusals and errors."""

    latencies_s: list[float] = field(default_factory=list)
    refused: int = 0
    errors: int = 0
    by_type: dict[str, int] = field(default_factory=dict)


class RemoteBotPlayer:
    """Plays one seat of one table until the match ends."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        base_url: str,
        token: str,
        table_id: str,
        *,
        tie_break: int = 0,
        stats: ActionStats | None = None,
        on_view: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self._http = http
        self._base_url = base_url.rstrip("/")
        self._token = token
        self._table_id = table_id
        self._tie_break = tie_break
        self._bot: HeuristicBot | None = None
        self._done: set[tuple[int, str]] = set()
        self.stats = stats or ActionStats()
        self._on_view = on_view

    async def play(self, timeout_s: float = 600.0) -> dict[str, Any]:
        """Follow the table's WebSocket and act on every view; return the final view."""
        url = websocket_url(self._base_url, self._table_id, self._token)
        async with asyncio.timeout(timeout_s), websockets.connect(url, max_size=None) as socket:
            while True:
                message = json.loads(await socket.recv())
                if message.get("type") != "view":
                    continue
                view = message["view"]
                if self._on_view is not None:
                    self._on_view(view)
                if view["status"] in TERMINAL_STATUSES:
                    return dict(view)
                await self._maybe_act(view)

    async def _maybe_act(self, view: dict[str, Any]) -> None:
        seat = view["you"]["match_seat"]
        game = view.get("game_view")
        if seat is None or game is None:
            return
        if self._bot is None:
            self._bot = HeuristicBot(seat, self._tie_break)
        action = self._bot.act(game)
        if action is None:
            return
        action = {key: value for key, value in action.items() if key != "seat"}
        key = (view["step"], json.dumps(action, sort_keys=True))
        if key in self._done:
            return
        self._done.add(key)
        await self.send(action, f"s{view['step']}-{action['type']}")

    async def send(self, action: dict[str, Any], action_id: str) -> httpx.Response:
        """Post one action; refusals (the table moved on) are counted, not raised."""
        started = time.perf_counter()
        try:
            response = await self._http.post(
                f"{self._base_url}/tables/{self._table_id}/actions",
                json={"action_id": action_id, "action": action},
                headers={"Authorization": f"Bearer {self._token}"},
            )
        except httpx.HTTPError:
            self.stats.errors += 1
            raise
        if response.status_code == 200:
            self.stats.latencies_s.append(time.perf_counter() - started)
            self.stats.by_type[action["type"]] = self.stats.by_type.get(action["type"], 0) + 1
        elif response.status_code in (409, 422):
            self.stats.refused += 1
        else:
            self.stats.errors += 1
        return response
