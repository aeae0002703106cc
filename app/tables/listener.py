"""A LISTEN/NOTIFY channels backend that survives PostgreSQL being away.

Litestar's asyncpg backend opens its listening connection at startup and never again: a
database restart would silently stop every WebSocket push, and a database that is down
at startup would stop the worker from starting.  This backend keeps the set of wanted
channels, (re)connects in the background with a capped backoff, and re-issues ``LISTEN``
for every wanted channel after each reconnection.  Publishing is not used: tables notify
from inside their own transactions (``pg_notify``), so a notification exists only once
the change is committed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Iterable
from typing import Any

import asyncpg
import structlog
from litestar.channels import ChannelsBackend

__all__ = ("ResilientPgListener",)

logger = structlog.get_logger("raiz.listener")

RECONNECT_MIN_S = 0.2
RECONNECT_MAX_S = 5.0


class ResilientPgListener(ChannelsBackend):
    """``LISTEN`` on one dedicated connection per worker, reconnecting when it drops."""

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._wanted: set[str] = set()
        self._connection: asyncpg.Connection | None = None
        self._queue: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()
        self._lock = asyncio.Lock()
        self._keeper: asyncio.Task[None] | None = None
        self._lost = asyncio.Event()

    async def on_startup(self) -> None:
        self._queue = asyncio.Queue()
        self._lock = asyncio.Lock()
        self._lost = asyncio.Event()
        self._lost.set()
        self._keeper = asyncio.create_task(self._keep_connected(), name="raiz-pg-listener")

    async def on_shutdown(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
        async with self._lock:
            if self._connection is not None:
                with contextlib.suppress(Exception):
                    await self._connection.close()
                self._connection = None

    @property
    def connected(self) -> bool:
        """Whether the listening connection is up."""
        return self._connection is not None and not self._connection.is_closed()

    async def _keep_connected(self) -> None:
        delay = RECONNECT_MIN_S
        while True:
            await self._lost.wait()
            try:
                connection = await asyncpg.connect(self._dsn)
            except (TimeoutError, OSError, asyncpg.PostgresError) as error:
                logger.warning("listener_connect_failed", error=type(error).__name__)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RECONNECT_MAX_S)
                continue
            connection.add_termination_listener(self._on_terminated)
            try:
                async with self._lock:
                    self._connection = connection
                    self._lost.clear()
                    for channel in self._wanted:
                        await connection.add_listener(channel, self._on_notify)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
                # The connection died before every LISTEN was issued (a restart, a terminated
                # backend): start over, rather than let this task end and every socket of
                # the worker go without views for good.
                logger.warning("listener_listen_failed", error=type(error).__name__)
                self._connection = None
                self._lost.set()
                with contextlib.suppress(Exception):
                    connection.terminate()
                await asyncio.sleep(delay)
                delay = min(delay * 2, RECONNECT_MAX_S)
                continue
            delay = RECONNECT_MIN_S
            logger.info("listener_connected", channels=len(self._wanted))
            # A reconnection may have missed notifications: wake every watcher once.
            for channel in self._wanted:
                self._queue.put_nowait((channel, b"reconnected"))

    def _on_terminated(self, connection: asyncpg.Connection) -> None:
        if connection is self._connection:
            self._connection = None
            self._lost.set()

    def _on_notify(self, connection: Any, pid: int, channel: str, payload: object) -> None:
        self._queue.put_nowait((channel, str(payload).encode("utf-8")))

    async def publish(self, data: bytes, channels: Iterable[str]) -> None:
        raise RuntimeError("tables notify from their own transactions (pg_notify)")

    async def subscribe(self, channels: Iterable[str]) -> None:
        async with self._lock:
            for channel in set(channels) - self._wanted:
                self._wanted.add(channel)
                if self.connected:
                    assert self._connection is not None
                    await self._connection.add_listener(channel, self._on_notify)

    async def unsubscribe(self, channels: Iterable[str]) -> None:
        async with self._lock:
            for channel in set(channels) & self._wanted:
                self._wanted.discard(channel)
                if self.connected:
                    assert self._connection is not None
                    with contextlib.suppress(Exception):
                        await self._connection.remove_listener(channel, self._on_notify)

    async def stream_events(self) -> AsyncGenerator[tuple[str, bytes], None]:
        while True:
            channel, payload = await self._queue.get()
            if channel in self._wanted:
                yield channel, payload

    async def get_history(self, channel: str, limit: int | None = None) -> list[bytes]:
        return []
