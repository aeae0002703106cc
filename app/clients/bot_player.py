"""A bot that plays a table through the public API: HTTP for moves, WebSocket for views.

It sees exactly what a human client sees (its own view), lets the engine's heuristic bot
choose the move, and posts it with an action id derived from the view's step, so a retry
after a network error can never be applied twice.  It acts at most once per table step
(the same state may arrive twice: on connect, after a reconnection, or as the answer to its
own move), and it follows the table across a lost connection or a server restart by
reconnecting until the match ends or its time runs out.
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
from websockets.exceptions import ConnectionClosed, InvalidStatus

from app.games.bots import HeuristicBot

__all__ = ("ActionStats", "BotPlayerError", "RemoteBotPlayer", "websocket_url")

TERMINAL_STATUSES = frozenset({"finished", "cancelled"})
"""Table statuses after which a bot stops."""
NOT_FOUND_CLOSE_CODE = 4404
"""The table socket's close code for a table that does not exist."""
UNAUTHORIZED_CLOSE_CODE = 4401
"""The table socket's close code for a missing, unknown, expired or revoked token."""
RETRY_DELAYS_S = (0.1, 0.25, 0.5, 1.0, 2.0)
"""Pauses between attempts to post one action (same action id) or to reconnect."""


def websocket_url(base_url: str, table_id: str, token: str) -> str:
    """The table's WebSocket URL with the token in the query string."""
    scheme = "wss" if base_url.startswith("https") else "ws"
    host = base_url.split("://", 1)[1].rstrip("/")
    return f"{scheme}://{host}/tables/{table_id}/ws?token={token}"


class BotPlayerError(RuntimeError):
    """The bot cannot go on: the table does not exist or the token is refused."""


@dataclass(slots=True)
class ActionStats:
    """What a bot measured: latency of each accepted action, refusals and errors."""

    latencies_s: list[float] = field(default_factory=list)
    refused: int = 0
    errors: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    refusals: dict[str, int] = field(default_factory=dict)
    """Refusals by error code (the table moved on before the move arrived, mostly)."""
    failures: dict[str, int] = field(default_factory=dict)
    """Errors by cause: the exception's class for a network error, else the error code."""
    reconnects: int = 0


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
        on_message: Callable[[str], None] | None = None,
    ) -> None:
        self._http = http
        self._base_url = base_url.rstrip("/")
        self._token = token
        self._table_id = table_id
        self._tie_break = tie_break
        self._bot: HeuristicBot | None = None
        self._last_step = -1
        self._undelivered: dict[str, Any] | None = None
        self.stats = stats or ActionStats()
        self._on_view = on_view
        self._on_message = on_message
        """Every raw WebSocket frame, before parsing (recording, debugging)."""

    async def play(self, timeout_s: float = 600.0) -> dict[str, Any]:
        """Follow the table's WebSocket and act on every view; return the final view.

        A dropped connection is re-opened (with the same pauses as ``RETRY_DELAYS_S``,
        the last one repeated) until the match ends or ``timeout_s`` passes.
        """
        url = websocket_url(self._base_url, self._table_id, self._token)
        failures = 0
        async with asyncio.timeout(timeout_s):
            while True:
                try:
                    async with websockets.connect(url, max_size=None) as socket:
                        failures = 0
                        final = await self._follow(socket)
                        if final is not None:
                            return final
                except InvalidStatus as error:
                    status = error.response.status_code
                    if status in (401, 403, 404):
                        raise BotPlayerError(f"the table socket refused us: {status}") from None
                except ConnectionClosed as error:
                    if error.rcvd is not None and error.rcvd.code == NOT_FOUND_CLOSE_CODE:
                        raise BotPlayerError("the table does not exist") from None
                    if error.rcvd is not None and error.rcvd.code == UNAUTHORIZED_CLOSE_CODE:
                        raise BotPlayerError("the table socket refused our token") from None
                except (OSError, TimeoutError):
                    pass
                self.stats.reconnects += 1
                await asyncio.sleep(RETRY_DELAYS_S[min(failures, len(RETRY_DELAYS_S) - 1)])
                failures += 1

    async def _follow(self, socket: Any) -> dict[str, Any] | None:
        """Act on the views of one connection; the final view once the match is over."""
        async for frame in socket:
            text = frame if isinstance(frame, str) else frame.decode("utf-8")
            if self._on_message is not None:
                self._on_message(text)
            message = json.loads(text)
            if message.get("type") != "view":
                continue
            final = await self._handle(message["view"])
            if final is not None:
                return final
        return None

    async def _handle(self, view: dict[str, Any] | None) -> dict[str, Any] | None:
        """Act on ``view`` and then on each view our own moves are answered with."""
        while view is not None:
            if self._on_view is not None:
                self._on_view(view)
            if view["status"] in TERMINAL_STATUSES:
                return dict(view)
            view = await self._maybe_act(view)
        return None

    async def _maybe_act(self, view: dict[str, Any]) -> dict[str, Any] | None:
        """Post the bot's move for ``view`` (once per step); the answer's view if accepted.

        A move that could not be delivered at all (the server was away) is sent again, same
        move and same action id, when the same step shows up after a reconnection: an
        unchanged step proves it was not applied.
        """
        step = int(view["step"])
        action: dict[str, Any] | None
        if step == self._last_step and self._undelivered is not None:
            action = self._undelivered
        elif step <= self._last_step:
            return None
        else:
            self._last_step = step
            action = self._choose(view)
        self._undelivered = None
        if action is None:
            return None
        response = await self.send(action, f"s{step}-{action['type']}")
        if response is None:
            self._undelivered = action
            return None
        if response.status_code == 200:
            return dict(response.json())
        return None

    def _choose(self, view: dict[str, Any]) -> dict[str, Any] | None:
        seat = view["you"]["match_seat"]
        game = view.get("game_view")
        if seat is None or game is None:
            return None
        if self._bot is None:
            self._bot = HeuristicBot(seat, self._tie_break)
        action = self._bot.act(game)
        if action is None:
            return None
        return {key: value for key, value in action.items() if key != "seat"}

    async def send(self, action: dict[str, Any], action_id: str) -> httpx.Response | None:
        """Post one action, retrying network errors with the same action id (never applied
        twice); refusals (the table moved on) are counted, not raised. ``None`` when every
        attempt failed."""
        started = time.perf_counter()
        for attempt, delay_s in enumerate((0.0, *RETRY_DELAYS_S)):
            await asyncio.sleep(delay_s)
            try:
                response = await self._http.post(
                    f"{self._base_url}/tables/{self._table_id}/actions",
                    json={"action_id": action_id, "action": action},
                    headers={"Authorization": f"Bearer {self._token}"},
                )
            except httpx.TransportError as error:
                self.stats.errors += 1
                _count(self.stats.failures, type(error).__name__)
                continue
            if response.status_code == 200:
                self.stats.latencies_s.append(time.perf_counter() - started)
                self.stats.by_type[action["type"]] = self.stats.by_type.get(action["type"], 0) + 1
            elif response.status_code in (409, 422):
                self.stats.refused += 1
                _count(self.stats.refusals, _error_code(response))
            elif response.status_code >= 500 and attempt < len(RETRY_DELAYS_S):
                self.stats.errors += 1
                _count(self.stats.failures, _error_code(response))
                continue
            else:
                self.stats.errors += 1
                _count(self.stats.failures, _error_code(response))
            return response
        return None


def _count(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def _error_code(response: httpx.Response) -> str:
    try:
        return str(response.json().get("code", response.status_code))
    except ValueError:
        return str(response.status_code)
