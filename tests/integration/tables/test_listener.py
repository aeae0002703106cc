"""The worker's LISTEN connection (``ResilientPgListener``) against the real PostgreSQL: it
hears committed notifications, and it comes back by itself whenever its connection is cut,
also when the cut happens between connecting and re-issuing ``LISTEN``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import pytest

from app.db.engine import sync_url
from app.tables import listener as listener_module
from app.tables.listener import ResilientPgListener

pytestmark = pytest.mark.asyncio

CHANNEL = "raiz_table_test"
CONNECT = asyncpg.connect
"""The real ``asyncpg.connect`` (a test replaces the listener's)."""


@asynccontextmanager
async def running(dsn: str) -> AsyncIterator[tuple[ResilientPgListener, asyncio.Queue]]:
    """A started listener and the queue of everything its stream yields."""
    backend = ResilientPgListener(dsn)
    await backend.on_startup()
    received: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()

    async def consume() -> None:
        async for event in backend.stream_events():
            received.put_nowait(event)

    consumer = asyncio.create_task(consume())
    try:
        yield backend, received
    finally:
        consumer.cancel()
        await backend.on_shutdown()


async def heard(received: asyncio.Queue, dsn: str, payload: str) -> None:
    """``payload`` notified on ``CHANNEL`` reaches the listener's stream (the notification
    is sent again until the listener is back)."""
    sender = await CONNECT(dsn)
    try:
        async with asyncio.timeout(15):
            while True:
                await sender.execute("SELECT pg_notify($1, $2)", CHANNEL, payload)
                try:
                    async with asyncio.timeout(0.5):
                        while await received.get() != (CHANNEL, payload.encode()):
                            pass
                    return
                except TimeoutError:
                    continue
    finally:
        await sender.close()


async def terminate(dsn: str, pid: int) -> None:
    admin = await CONNECT(dsn)
    try:
        await admin.execute("SELECT pg_terminate_backend($1)", pid)
    finally:
        await admin.close()


async def test_the_listener_comes_back_after_its_connection_is_cut(database_url):
    dsn = sync_url(database_url)
    async with running(dsn) as (backend, received):
        await backend.subscribe([CHANNEL])
        await heard(received, dsn, "1")
        assert backend._connection is not None
        await terminate(dsn, backend._connection.get_server_pid())
        await heard(received, dsn, "2")
        assert backend.connected


async def test_the_listener_comes_back_when_the_cut_comes_before_its_listen(
    database_url, monkeypatch
):
    """The connection dies right after it was opened (a PostgreSQL restart, an operator
    terminating backends): re-issuing LISTEN fails, and the listener must try again rather
    than stop for good (every table socket of the worker would get no view ever again)."""
    dsn = sync_url(database_url)
    cuts = []

    async def connect_then_cut(*args, **kwargs):
        connection = await CONNECT(*args, **kwargs)
        if not cuts:
            cuts.append(connection.get_server_pid())
            await terminate(dsn, connection.get_server_pid())
            # the termination reaches the client socket (where a fixed 0.2 s may not have)
            async with asyncio.timeout(10):
                while not connection.is_closed():
                    await asyncio.sleep(0.01)
        return connection

    async with running(dsn) as (backend, received):
        await backend.subscribe([CHANNEL])
        await heard(received, dsn, "1")
        monkeypatch.setattr(listener_module.asyncpg, "connect", connect_then_cut)
        assert backend._connection is not None
        await terminate(dsn, backend._connection.get_server_pid())
        await heard(received, dsn, "2")
        assert cuts and backend.connected


async def test_a_reconnection_wakes_every_watched_channel(database_url):
    """Notifications sent while the connection was down are lost: once back, the listener
    wakes every wanted channel once (``reconnected``), so each socket re-reads its table."""
    dsn = sync_url(database_url)
    async with running(dsn) as (backend, received):
        await backend.subscribe([CHANNEL, f"{CHANNEL}_2"])
        await heard(received, dsn, "1")
        assert backend._connection is not None
        await terminate(dsn, backend._connection.get_server_pid())
        woken = set()
        async with asyncio.timeout(15):
            while len(woken) < 2:
                channel, payload = await received.get()
                if payload == b"reconnected":
                    woken.add(channel)
        assert woken == {CHANNEL, f"{CHANNEL}_2"}
