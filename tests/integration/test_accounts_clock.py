"""Accounts keep one clock, the database's: a worker whose clock is off neither hands out a
token or device already expired (or living too long), nor ends a self-exclusion early, nor
lets a guesser past the login throttle.  ``worker_clock_off`` shifts every service module's
``utcnow`` as that worker's clock would be; the database's ``now()`` is the right one."""

from __future__ import annotations

import datetime as dt
import uuid

import asyncpg
import pytest

from app.accounts.devices import DEVICE_TTL, KnownDevices
from app.accounts.suspension import SuspensionService
from tests.helpers import (
    DEFAULT_PASSWORD,
    assert_error,
    auth,
    behind_the_proxy,
    create_user,
    database_clock,
    login,
    worker_clock_off,
)
from tests.integration.tables.scenario import db_session

pytestmark = pytest.mark.asyncio

DAYS = dt.timedelta(days=2)


async def _fetch(settings, query: str, *arguments):
    connection = await asyncpg.connect(settings.database_url)
    try:
        return await connection.fetchval(query, *arguments)
    finally:
        await connection.close()


@pytest.mark.parametrize("offset", [-DAYS, DAYS], ids=["late", "early"])
async def test_a_token_and_a_device_live_their_time_on_the_databases_clock(
    client, settings, monkeypatch, offset
):
    # Logged in on a worker whose clock is two days off, then used on the others (and on
    # it): the token expires token_ttl_s after the database's now, the device DEVICE_TTL
    # after it.  With the worker's clock, a late worker's token would be dead on arrival
    # everywhere, an early worker's would live two days too long.
    user_id = await create_user(settings, "ana")
    worker_clock_off(monkeypatch, offset)
    response = await client.post(
        "/auth/login", json={"username": "ana", "password": DEFAULT_PASSWORD}
    )
    assert response.status_code == 200, response.text
    now = await database_clock(settings)
    expires_at = dt.datetime.fromisoformat(response.json()["expires_at"])
    expected = now + dt.timedelta(seconds=settings.token_ttl_s)
    assert abs((expires_at - expected).total_seconds()) < 60
    device_expires = await _fetch(
        settings, "SELECT max(expires_at) FROM game.login_devices WHERE user_id = $1",
        uuid.UUID(user_id),
    )  # fmt: skip
    assert abs((device_expires - (now + DEVICE_TTL)).total_seconds()) < 60
    token = response.json()["token"]
    assert (await client.get("/auth/me", headers=auth(token))).status_code == 200
    monkeypatch.undo()
    assert (await client.get("/auth/me", headers=auth(token))).status_code == 200


async def test_an_early_worker_neither_expires_tokens_nor_forgets_devices_early(
    client, settings, monkeypatch
):
    user_id = uuid.UUID(await create_user(settings, "ana"))
    response = await client.post(
        "/auth/login", json={"username": "ana", "password": DEFAULT_PASSWORD}
    )
    token, device = response.json()["token"], response.json()["device_token"]
    worker_clock_off(monkeypatch, DEVICE_TTL + DAYS)  # beyond every lifetime
    assert (await client.get("/auth/me", headers=auth(token))).status_code == 200
    async with db_session(settings) as session:
        assert await KnownDevices(session).forget_expired() == 0
    again = await client.post(
        "/auth/login",
        json={"username": "ana", "password": DEFAULT_PASSWORD, "device_token": device},
    )
    assert again.status_code == 200, again.text
    # the device was known and renewed, not replaced by a second one
    devices = "SELECT count(*) FROM game.login_devices WHERE user_id = $1"
    assert await _fetch(settings, devices, user_id) == 1


async def test_a_self_exclusion_runs_its_days_on_the_databases_clock(client, settings, monkeypatch):
    # Excluded on a worker a day late, the end is the database's now + the days; the
    # every-minute job on a worker three days early does not end it (with the worker's
    # clocks it would have ended at once).
    user_id = await create_user(settings, "ana")
    token = await login(client, "ana")
    worker_clock_off(monkeypatch, -dt.timedelta(days=1))
    response = await client.post(
        "/players/me/self-exclusion", json={"days": 2}, headers=auth(token)
    )
    assert response.status_code == 200, response.text
    until = dt.datetime.fromisoformat(response.json()["user"]["suspended_until"])
    expected = await database_clock(settings) + dt.timedelta(days=2)
    assert abs((until - expected).total_seconds()) < 60
    monkeypatch.undo()
    worker_clock_off(monkeypatch, dt.timedelta(days=3))
    async with db_session(settings) as session:
        assert await SuspensionService(session).end_self_exclusions() == 0
    refused = await client.post(
        "/auth/login", json={"username": "ana", "password": DEFAULT_PASSWORD}
    )
    assert_error(refused, 403, "account_suspended")
    assert (
        await _fetch(
            settings, "SELECT suspended_until FROM game.users WHERE id = $1", uuid.UUID(user_id)
        )
        == until
    )


@pytest.mark.parametrize("offset", [-DAYS, DAYS], ids=["late", "early"])
async def test_the_login_throttle_counts_on_the_databases_clock(
    client, settings, monkeypatch, offset
):
    # Guesses sent through a worker whose clock is off are counted in the window all the
    # same: with its clock, an early worker's window would start after every failure (none
    # counted, the throttle bypassed), a late worker's would count failures days old.
    await create_user(settings, "ana")
    worker_clock_off(monkeypatch, offset)
    wrong = {"username": "ana", "password": "not-the-password-at-all"}
    for _ in range(settings.login_max_failures):
        assert_error(await client.post("/auth/login", json=wrong), 401, "invalid_credentials")
    assert_error(await client.post("/auth/login", json=wrong), 429, "login_throttled")
    if offset > dt.timedelta(0):
        return
    # failures older than the window (by the database's clock) no longer count
    await _fetch(settings, "UPDATE game.login_failures SET at = at - interval '1 day'")
    assert_error(await client.post("/auth/login", json=wrong), 401, "invalid_credentials")


async def test_a_password_change_on_an_early_worker_revokes_every_live_token(
    client, settings, monkeypatch
):
    # The other devices' tokens are revoked whatever the worker's clock says: on a worker a
    # day early, tokens that live 12 hours looked expired already, were left alone, and kept
    # working on the other workers after the password changed.
    await create_user(settings, "ana")
    this_device, other_device = [await login(client, "ana") for _ in range(2)]
    worker_clock_off(monkeypatch, dt.timedelta(days=1))
    response = await client.post(
        "/auth/password",
        json={"current_password": DEFAULT_PASSWORD, "new_password": "a-new-password-123"},
        headers=auth(this_device),
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"revoked_tokens": 1}
    monkeypatch.undo()
    assert (await client.get("/auth/me", headers=auth(this_device))).status_code == 200
    assert_error(await client.get("/auth/me", headers=auth(other_device)), 401, "not_authenticated")


@pytest.mark.parametrize("offset", [-DAYS, DAYS], ids=["late", "early"])
async def test_the_signup_throttle_counts_on_the_databases_clock(settings, monkeypatch, offset):
    # The sign-ups of one address are dated and counted on the database's clock: through an
    # early worker the window would start after them (none counted, the farm goes on).
    limited = settings.model_copy(update={"signup_max_per_address": 2})
    worker_clock_off(monkeypatch, offset)
    async with behind_the_proxy(limited) as send:
        for n in range(2):
            response = await send("203.0.113.9", f"farm{n}", DEFAULT_PASSWORD, "/auth/signup")
            assert response.status_code == 201, response.text
        refused = await send("203.0.113.9", "farm2", DEFAULT_PASSWORD, "/auth/signup")
        assert_error(refused, 429, "signup_throttled")
    created = "SELECT max(created_at) FROM game.users WHERE username LIKE 'farm%'"
    moment = await _fetch(settings, created)
    assert abs((moment - await database_clock(settings)).total_seconds()) < 60
