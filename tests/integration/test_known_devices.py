"""Known devices: strangers guessing from many addresses do not lock the player's devices out."""

from __future__ import annotations

import asyncio
import datetime as dt

import asyncpg
import pytest

from app.accounts.devices import DEVICE_TTL, MAX_DEVICES_PER_USER, KnownDevices
from tests.helpers import (
    DEFAULT_PASSWORD,
    assert_error,
    behind_the_proxy,
    create_user,
    until_waiting_on_locks,
)
from tests.integration.tables.scenario import sql

pytestmark = pytest.mark.asyncio

WRONG = "not-the-password"


async def _lock_the_account(send, username: str, failures: int) -> None:
    """``failures`` wrong guesses at ``username`` from as many addresses."""
    for n in range(failures):
        assert_error(await send(f"203.0.113.{n}", username, WRONG), 401, "invalid_credentials")


async def _devices(settings, username: str) -> int:
    rows = await sql(
        settings,
        "SELECT count(*) FROM game.login_devices d JOIN game.users u ON u.id = d.user_id "
        "WHERE u.username = :name",
        name=username,
    )
    return int(rows[0][0])


async def test_a_known_device_logs_in_while_strangers_lock_the_account(settings):
    limited = settings.model_copy(update={"login_max_failures_per_account": 6})
    await create_user(settings, "ana")
    async with behind_the_proxy(limited) as send:
        first = await send("198.51.100.7", "ana", DEFAULT_PASSWORD)
        assert first.status_code == 200, first.text
        device = first.json()["device_token"]
        assert isinstance(device, str) and len(device) >= 40
        await _lock_the_account(send, "ana", 6)
        # a new device, even from the player's own address, is locked out with everybody ...
        assert_error(await send("198.51.100.7", "ana", DEFAULT_PASSWORD), 429, "login_throttled")
        # ... the known one, from any address, gets in (and is not given another token)
        known = await send("192.0.2.1", "ana", DEFAULT_PASSWORD, device_token=device)
        assert known.status_code == 200, known.text
        assert known.json()["device_token"] is None
        # a device token opens nothing by itself
        guess = await send("192.0.2.1", "ana", WRONG, device_token=device)
        assert_error(guess, 401, "invalid_credentials")
    assert await _devices(settings, "ana") == 1


async def test_a_known_device_is_throttled_on_its_own_failures(settings):
    await create_user(settings, "bia")
    async with behind_the_proxy(settings) as send:
        device = (await send("198.51.100.7", "bia", DEFAULT_PASSWORD)).json()["device_token"]
        for n in range(settings.login_max_failures):
            guess = await send(f"192.0.2.{n}", "bia", WRONG, device_token=device)
            assert_error(guess, 401, "invalid_credentials")
        refused = await send("192.0.2.99", "bia", DEFAULT_PASSWORD, device_token=device)
        assert_error(refused, 429, "login_throttled")
        # the device's failures are its own: a new device is not throttled by them
        assert (await send("198.51.100.8", "bia", DEFAULT_PASSWORD)).status_code == 200


async def test_another_users_expired_or_unknown_device_token_counts_as_none(settings):
    limited = settings.model_copy(update={"login_max_failures_per_account": 3})
    await create_user(settings, "caio")
    await create_user(settings, "dani")
    async with behind_the_proxy(limited) as send:
        caio = (await send("198.51.100.7", "caio", DEFAULT_PASSWORD)).json()["device_token"]
        dani = (await send("198.51.100.7", "dani", DEFAULT_PASSWORD)).json()["device_token"]
        await sql(
            settings,
            "UPDATE game.login_devices SET expires_at = :past WHERE user_id = "
            "(SELECT id FROM game.users WHERE username = 'dani')",
            past=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1),
        )
        await _lock_the_account(send, "dani", 3)
        for token in (caio, dani, "made-up", "x" * 128):
            refused = await send("192.0.2.1", "dani", DEFAULT_PASSWORD, device_token=token)
            assert_error(refused, 429, "login_throttled")
        too_long = await send("192.0.2.1", "dani", DEFAULT_PASSWORD, device_token="x" * 129)
        assert_error(too_long, 400, "validation_error")


async def test_a_player_keeps_at_most_the_limit_of_devices_the_newest(settings):
    await create_user(settings, "edu")
    async with behind_the_proxy(settings) as send:
        tokens = [
            (await send("198.51.100.7", "edu", DEFAULT_PASSWORD)).json()["device_token"]
            for _ in range(MAX_DEVICES_PER_USER + 2)
        ]
        assert len(set(tokens)) == len(tokens)
        assert await _devices(settings, "edu") == MAX_DEVICES_PER_USER
        limited = settings.model_copy(update={"login_max_failures_per_account": 1})
    async with behind_the_proxy(limited) as send:
        await _lock_the_account(send, "edu", 1)
        newest = await send("192.0.2.1", "edu", DEFAULT_PASSWORD, device_token=tokens[-1])
        assert newest.status_code == 200, newest.text
        oldest = await send("192.0.2.1", "edu", DEFAULT_PASSWORD, device_token=tokens[0])
        assert_error(oldest, 429, "login_throttled")


async def test_setting_a_new_password_forgets_the_devices(settings, cli):
    from app.cli import main

    await create_user(settings, "fia")
    async with behind_the_proxy(settings) as send:
        device = (await send("198.51.100.7", "fia", DEFAULT_PASSWORD)).json()["device_token"]
    result = await asyncio.to_thread(
        cli.invoke,
        main,
        ["users", "set-password", "--username", "fia", "--password", "a new passphrase"],
    )
    assert result.exit_code == 0, result.output
    assert await _devices(settings, "fia") == 0
    limited = settings.model_copy(update={"login_max_failures_per_account": 1})
    async with behind_the_proxy(limited) as send:
        await _lock_the_account(send, "fia", 1)
        stale = await send("192.0.2.1", "fia", "a new passphrase", device_token=device)
        assert_error(stale, 429, "login_throttled")


async def test_expired_devices_are_forgotten_by_the_clean_up(settings):
    from app.accounts.service import AccountService
    from app.db import Database

    await create_user(settings, "gil")
    async with behind_the_proxy(settings) as send:
        for _ in range(2):
            assert (await send("198.51.100.7", "gil", DEFAULT_PASSWORD)).status_code == 200
    await sql(
        settings,
        "UPDATE game.login_devices SET expires_at = now() - interval '1 second' WHERE id = "
        "(SELECT id FROM game.login_devices ORDER BY created_at LIMIT 1)",
    )
    assert settings.database_url is not None
    database = Database.connect(settings.database_url, settings)
    try:
        async with database.session() as session:
            await AccountService(session, settings).forget_old_login_failures()
    finally:
        await database.dispose()
    assert await _devices(settings, "gil") == 1


async def test_concurrent_logins_keep_no_more_than_the_limit_of_devices(settings, monkeypatch):
    # Two logins issue a device each at once, the player holding one short of the limit: each
    # trims to the limit what it sees, and neither sees the other's new device.  The first is
    # held right after its device is issued (not committed) while the second goes on.
    await create_user(settings, "hana")
    async with behind_the_proxy(settings) as send:
        for _ in range(MAX_DEVICES_PER_USER - 1):
            assert (await send("198.51.100.7", "hana", DEFAULT_PASSWORD)).status_code == 200
        real_issue = KnownDevices.issue
        issued, release = asyncio.Event(), asyncio.Event()

        async def held_issue(self, user_id):
            token = await real_issue(self, user_id)
            if not issued.is_set():
                issued.set()
                await release.wait()
            return token

        monkeypatch.setattr(KnownDevices, "issue", held_issue)
        first = asyncio.ensure_future(send("198.51.100.7", "hana", DEFAULT_PASSWORD))
        await asyncio.wait_for(issued.wait(), 30)
        second = asyncio.ensure_future(send("198.51.100.8", "hana", DEFAULT_PASSWORD))
        assert settings.database_url is not None
        watcher = await asyncpg.connect(settings.database_url)
        try:
            # the second login either finishes or waits for the first one's device
            waiting = asyncio.ensure_future(until_waiting_on_locks(watcher, 1))
            await asyncio.wait({second, waiting}, return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
        finally:
            await watcher.close()
        release.set()
        assert (await first).status_code == 200
        assert (await second).status_code == 200
    assert await _devices(settings, "hana") == MAX_DEVICES_PER_USER


async def test_a_password_change_from_a_known_device_is_not_locked_out_and_forgets_the_others(
    settings,
):
    from litestar.testing import AsyncTestClient

    from app.main import create_app
    from tests.helpers import auth

    limited = settings.model_copy(update={"login_max_failures_per_account": 3})
    await create_user(settings, "hugo")
    async with behind_the_proxy(limited) as send:
        logins = [await send("198.51.100.7", "hugo", DEFAULT_PASSWORD) for _ in range(3)]
        token = logins[0].json()["token"]
        kept, forgotten, other = (login.json()["device_token"] for login in logins)
        await _lock_the_account(send, "hugo", 3)  # strangers fill the account's limit
    assert await _devices(settings, "hugo") == 3
    async with AsyncTestClient(app=create_app(limited)) as own:
        change = {"current_password": DEFAULT_PASSWORD, "new_password": "a brand new passphrase"}
        # from an unknown device the change is throttled with the account ...
        refused = await own.post("/auth/password", json=change, headers=auth(token))
        assert_error(refused, 429, "login_throttled")
        # ... from a known one it goes through, and that device is the only one kept
        changed = await own.post(
            "/auth/password", json={**change, "device_token": kept}, headers=auth(token)
        )
        assert changed.status_code == 200, changed.text
    assert await _devices(settings, "hugo") == 1
    async with behind_the_proxy(limited) as send:  # the strangers' failures still count
        new = "a brand new passphrase"
        assert_error(await send("192.0.2.1", "hugo", new), 429, "login_throttled")
        assert (await send("192.0.2.1", "hugo", new, device_token=kept)).status_code == 200
        for stale in (forgotten, other):
            refused = await send("192.0.2.1", "hugo", new, device_token=stale)
            assert_error(refused, 429, "login_throttled")


async def test_a_login_from_a_device_keeps_it_for_the_whole_time_again(settings):
    await create_user(settings, "hel")
    async with behind_the_proxy(settings) as send:
        device = (await send("198.51.100.7", "hel", DEFAULT_PASSWORD)).json()["device_token"]
        # a device about to expire (used daily for almost 180 days)
        await sql(
            settings,
            "UPDATE game.login_devices SET expires_at = now() + interval '1 minute'"
            " WHERE user_id = (SELECT id FROM game.users WHERE username = 'hel')",
        )
        again = await send("198.51.100.7", "hel", DEFAULT_PASSWORD, device_token=device)
        assert again.status_code == 200 and again.json()["device_token"] is None, again.text
        wrong = await send("198.51.100.7", "hel", WRONG, device_token=device)
        assert_error(wrong, 401, "invalid_credentials")
    (left,) = await sql(
        settings,
        "SELECT expires_at - now() FROM game.login_devices"
        " WHERE user_id = (SELECT id FROM game.users WHERE username = 'hel')",
    )
    # renewed by the login, not by the failed guess after it
    assert DEVICE_TTL - dt.timedelta(minutes=1) < left[0] <= DEVICE_TTL


async def test_the_devices_forgotten_beyond_the_limit_are_the_least_recently_used(settings):
    await create_user(settings, "ivo")
    async with behind_the_proxy(settings) as send:
        first = (await send("198.51.100.7", "ivo", DEFAULT_PASSWORD)).json()["device_token"]
        for _ in range(MAX_DEVICES_PER_USER - 1):
            assert (await send("198.51.100.7", "ivo", DEFAULT_PASSWORD)).status_code == 200
        # the first device is the oldest, but used again now: the second one goes instead
        await sql(
            settings,
            "UPDATE game.login_devices SET expires_at = expires_at - interval '1 day'"
            " WHERE user_id = (SELECT id FROM game.users WHERE username = 'ivo')",
        )
        used = await send("198.51.100.7", "ivo", DEFAULT_PASSWORD, device_token=first)
        assert used.status_code == 200, used.text
        assert (await send("198.51.100.7", "ivo", DEFAULT_PASSWORD)).status_code == 200
        assert await _devices(settings, "ivo") == MAX_DEVICES_PER_USER
        limited = settings.model_copy(update={"login_max_failures_per_account": 1})
    async with behind_the_proxy(limited) as send:
        await _lock_the_account(send, "ivo", 1)
        kept = await send("192.0.2.1", "ivo", DEFAULT_PASSWORD, device_token=first)
        assert kept.status_code == 200, kept.text


@pytest.mark.parametrize(
    "change",
    [
        "id = gen_random_uuid()",
        "user_id = (SELECT id FROM game.users WHERE username <> 'jon' LIMIT 1)",
        "token_sha256 = sha256(token_sha256)",
        "created_at = created_at - interval '1 second'",
    ],
)
async def test_only_a_devices_expiry_may_change_even_for_the_owner(
    client, settings, database_url, change
):
    await create_user(settings, "jon")
    await create_user(settings, "kim")
    assert (await client.post("/auth/login", json=_credentials("jon"))).status_code == 200
    connection = await asyncpg.connect(database_url)
    try:
        before = await connection.fetch("SELECT * FROM game.login_devices")
        assert len(before) == 1
        with pytest.raises(asyncpg.RaiseError, match="only a device's expiry may change"):
            await connection.execute(f"UPDATE game.login_devices SET {change}")
        assert await connection.fetch("SELECT * FROM game.login_devices") == before
        await connection.execute(
            "UPDATE game.login_devices SET expires_at = expires_at - interval '1 second'"
        )
    finally:
        await connection.close()


def _credentials(username: str) -> dict[str, str]:
    return {"username": username, "password": DEFAULT_PASSWORD}


async def test_a_device_expiring_while_its_login_is_checked_is_not_renewed(settings, monkeypatch):
    # The device is live when the login looks it up, and expires while the password is checked
    # (scrypt, queued behind other logins): an expired token counts as none, so the login must
    # not give it another 180 days; it is answered with a new device instead.
    await create_user(settings, "lia")
    real_renew = KnownDevices.renew

    async def renew_after_expiry(self, user_id, device_id):
        await sql(
            settings,
            "UPDATE game.login_devices SET expires_at = now() - interval '1 second' WHERE id = :id",
            id=device_id,
        )
        return await real_renew(self, user_id, device_id)

    async with behind_the_proxy(settings) as send:
        device = (await send("198.51.100.7", "lia", DEFAULT_PASSWORD)).json()["device_token"]
        monkeypatch.setattr(KnownDevices, "renew", renew_after_expiry)
        again = await send("198.51.100.7", "lia", DEFAULT_PASSWORD, device_token=device)
        assert again.status_code == 200, again.text
        fresh = again.json()["device_token"]
        assert isinstance(fresh, str) and fresh != device
    rows = await sql(
        settings,
        "SELECT expires_at > now() FROM game.login_devices d JOIN game.users u"
        " ON u.id = d.user_id WHERE u.username = 'lia' ORDER BY d.created_at",
    )
    assert [row[0] for row in rows] == [False, True]  # the expired one stays expired
    limited = settings.model_copy(update={"login_max_failures_per_account": 1})
    async with behind_the_proxy(limited) as send:
        await _lock_the_account(send, "lia", 1)
        stale = await send("192.0.2.1", "lia", DEFAULT_PASSWORD, device_token=device)
        assert_error(stale, 429, "login_throttled")
        kept = await send("192.0.2.1", "lia", DEFAULT_PASSWORD, device_token=fresh)
        assert kept.status_code == 200, kept.text


async def test_a_password_set_while_a_device_logs_in_forgets_it_for_good(settings, monkeypatch):
    # An operator sets a new password (the account taken back) while the login from a known
    # device checks the old one: the login is refused (the password it checked is no longer
    # the account's), and the device the new password forgot does not come back.
    import app.accounts.service as accounts
    from app.db import Database

    await create_user(settings, "mel")
    real_hashing = accounts._hashing
    racing = False

    async def hashing_then_password_set(work, *args):
        nonlocal racing
        result = await real_hashing(work, *args)
        if racing and work is accounts._check_password:
            racing = False
            assert settings.database_url is not None
            database = Database.connect(settings.database_url, settings)
            try:
                async with database.session() as session:
                    service = accounts.AccountService(session, settings)
                    await service.set_password("mel", "taken back for good")
            finally:
                await database.dispose()
        return result

    monkeypatch.setattr(accounts, "_hashing", hashing_then_password_set)
    async with behind_the_proxy(settings) as send:
        device = (await send("198.51.100.7", "mel", DEFAULT_PASSWORD)).json()["device_token"]
        racing = True
        login = await send("198.51.100.7", "mel", DEFAULT_PASSWORD, device_token=device)
        assert not racing
        assert_error(login, 401, "invalid_credentials")
    assert await _devices(settings, "mel") == 0


async def test_a_renewal_and_a_new_devices_trim_are_serialized(settings):
    # A login from another device issues a new one and trims the least recently used, while
    # this login renews its own: the renewal waits for the trim (the lock ``issue`` holds),
    # then finds its device gone and gets a new one, instead of answering 200 with a device
    # the trim forgot after it was renewed.
    from app.accounts.devices import DEVICES_LOCK_SPACE

    await create_user(settings, "noa")
    async with behind_the_proxy(settings) as send:
        device = (await send("198.51.100.7", "noa", DEFAULT_PASSWORD)).json()["device_token"]
        assert settings.database_url is not None
        trim = await asyncpg.connect(settings.database_url)
        try:
            async with trim.transaction():
                user_id = await trim.fetchval("SELECT id FROM game.users WHERE username = 'noa'")
                await trim.execute(
                    "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                    DEVICES_LOCK_SPACE,
                    str(user_id),
                )
                login = asyncio.ensure_future(
                    send("198.51.100.7", "noa", DEFAULT_PASSWORD, device_token=device)
                )
                await until_waiting_on_locks(trim, 1)
                await trim.execute("DELETE FROM game.login_devices WHERE user_id = $1", user_id)
            again = await login
        finally:
            await trim.close()
    assert again.status_code == 200, again.text
    fresh = again.json()["device_token"]
    assert isinstance(fresh, str) and fresh != device
    assert await _devices(settings, "noa") == 1
