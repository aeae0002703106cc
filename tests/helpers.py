"""Helpers shared by integration tests."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import asyncpg
import httpx
import pytest

from app.accounts.service import AccountService
from app.config import Settings
from app.db import Database, base

__all__ = (
    "ERROR_KEYS",
    "assert_error",
    "auth",
    "behind_the_proxy",
    "create_user",
    "database_clock",
    "from_threads",
    "hold_the_first_password_check",
    "login",
    "sent_while_suspending",
    "until_waiting_on_locks",
    "worker_clock_off",
)

ERROR_KEYS = {"code", "message", "details"}
DEFAULT_PASSWORD = "correct horse battery"


async def create_user(settings: Settings, username: str, role: str = "player") -> str:
    """Create a user directly in the database (as ``raiz users create`` does)."""
    assert settings.database_url is not None
    database = Database.connect(settings.database_url, settings)
    try:
        async with database.session() as session:
            user = await AccountService(session, settings).create_user(
                username, DEFAULT_PASSWORD, role
            )
            return str(user.id)
    finally:
        await database.dispose()


async def login(client: Any, username: str, password: str = DEFAULT_PASSWORD) -> str:
    """Log in through the API and return the bearer token."""
    response = await client.post("/auth/login", json={"username": username, "password": password})
    assert response.status_code == 200, response.text
    return str(response.json()["token"])


def auth(token: str) -> dict[str, str]:
    """The Authorization header for ``token``."""
    return {"Authorization": f"Bearer {token}"}


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    """Assert an error response: status, the exact body shape and the code."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == ERROR_KEYS, body
    assert body["code"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["details"], dict)
    return dict(body)


@contextlib.contextmanager
def from_threads(
    client: Any, workers: int = 2
) -> Iterator[tuple[httpx.Client, ThreadPoolExecutor]]:
    """A synchronous client of the app and ``workers`` threads to send requests from, so a
    request can wait inside the app while the test sends others."""
    from litestar.testing.transport import TestClientTransport

    class Shared(httpx.BaseTransport):  # the portal transport, for requests from threads
        inner = TestClientTransport(client=client, raise_server_exceptions=True)

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            return self.inner.handle_request(request)

    with (
        httpx.Client(transport=Shared(), base_url=str(client.base_url)) as sync,
        ThreadPoolExecutor(max_workers=workers) as pool,
    ):
        yield sync, pool


@contextlib.asynccontextmanager
async def behind_the_proxy(
    settings: Settings,
) -> AsyncIterator[Callable[..., Awaitable[httpx.Response]]]:
    """Log in as through the deploy's nginx: uvicorn trusts the proxy on loopback and takes
    the client address from X-Forwarded-For; ``send(address, username, password)`` (a
    sign-up with ``path="/auth/signup"``; a login from a known device with ``device_token``)."""
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    from app.main import create_app

    app = create_app(settings)
    transport = httpx.ASGITransport(
        app=ProxyHeadersMiddleware(app, trusted_hosts="127.0.0.1"), client=("127.0.0.1", 40000)
    )
    async with (
        app.lifespan(),
        httpx.AsyncClient(transport=transport, base_url="http://raiz") as proxied,
    ):

        async def send(
            address: str,
            username: str,
            password: str,
            path: str = "/auth/login",
            device_token: str | None = None,
        ) -> httpx.Response:
            body = {"username": username, "password": password}
            if device_token is not None:
                body["device_token"] = device_token
            return await proxied.post(path, json=body, headers={"X-Forwarded-For": address})

        yield send


async def database_clock(settings: Settings) -> dt.datetime:
    """The database's ``now()``, the clock every worker decides by (:func:`worker_clock_off`)."""
    connection = await asyncpg.connect(settings.database_url)
    try:
        moment: dt.datetime = await connection.fetchval("SELECT now()")
        return moment
    finally:
        await connection.close()


def worker_clock_off(monkeypatch: Any, offset: dt.timedelta) -> None:
    """As if this worker's clock were ``offset`` off: every module of the service reading
    ``utcnow`` (``app.db.base`` included, so a call through the module too) reads it shifted;
    the database's clock stays the right one.  The app under test, the test's own timers
    (``tests.integration.tables.scenario.clock``) and runners all run in this process: they
    are the skewed worker; the database is every worker's."""
    from rng import models as rng_models

    real = base.utcnow
    clocks = (real, rng_models.utcnow)  # (the RNG service keeps its own, being apart)

    def skewed() -> dt.datetime:
        return real() + offset

    for name, module in list(sys.modules.items()):
        if name.startswith(("app.", "rng.")) and getattr(module, "utcnow", None) in clocks:
            monkeypatch.setattr(module, "utcnow", skewed)


def hold_the_first_password_check(monkeypatch: Any) -> tuple[threading.Event, threading.Event]:
    """The next password check (in a hashing thread) waits until ``release`` is set, once it
    has set ``checked``; later checks run as usual."""
    from app.accounts import service

    real_check = service._check_password
    checked, release = threading.Event(), threading.Event()
    calls: list[bool] = []

    def check(password, stored, settings_):
        matches = real_check(password, stored, settings_)
        calls.append(matches)
        if len(calls) == 1:
            checked.set()
            release.wait(30)
        return matches

    monkeypatch.setattr(service, "_check_password", check)
    return checked, release


async def until_waiting_on_locks(connection: Any, count: int) -> None:
    """Until ``count`` other sessions of this database wait for a lock (``connection``: an
    asyncpg connection, in a transaction or not)."""
    for _ in range(300):
        # a transaction keeps its first view of pg_stat_activity: the holder's may be open
        await connection.execute("SELECT pg_stat_clear_snapshot()")
        waiting = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        if waiting >= count:
            return
        await asyncio.sleep(0.02)
    pytest.fail(f"{count} requests never waited for a lock")


async def until_others_wait_on_locks(database_url: str, count: int = 1) -> None:
    """:func:`until_waiting_on_locks` from a connection of its own: until ``count`` sessions
    of the database wait for a lock (where a fixed sleep let a slow machine's waiter arrive
    after the holder had ended, and the race went untested)."""
    connection = await asyncpg.connect(database_url)
    try:
        await until_waiting_on_locks(connection, count)
    finally:
        await connection.close()


async def sent_while_suspending(
    client: Any, settings: Settings, user_id: str, *requests: tuple[str, Any, str]
) -> list[httpx.Response]:
    """POST each ``(path, body, token)`` (at most two) while the user's suspension is being
    committed (an uncommitted UPDATE holds the account's row): once every request waits for
    that row, the suspension commits; the responses, in order."""
    assert settings.database_url is not None and len(requests) <= 2
    holder = await asyncpg.connect(settings.database_url)
    try:
        suspension = holder.transaction()
        await suspension.start()
        await holder.execute(
            "UPDATE game.users SET suspended_at = now() WHERE id = $1", uuid.UUID(user_id)
        )
        loop = asyncio.get_running_loop()
        with from_threads(client) as (sync, pool):
            pending = [
                loop.run_in_executor(
                    pool,
                    lambda path=path, body=body, token=token: sync.post(
                        path, json=body, headers=auth(token)
                    ),
                )
                for path, body, token in requests
            ]
            await until_waiting_on_locks(holder, len(requests))
            await suspension.commit()
            return [await response for response in pending]
    finally:
        await holder.close()
