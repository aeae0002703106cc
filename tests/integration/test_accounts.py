"""Sign-up, login, token expiry and revocation, role guards, throttling, error shape."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import asyncpg
import pytest

from tests.helpers import (
    DEFAULT_PASSWORD,
    assert_error,
    auth,
    behind_the_proxy,
    create_user,
    from_threads,
    hold_the_first_password_check,
    login,
)
from tests.integration.tables.scenario import concurrently

pytestmark = pytest.mark.asyncio


async def test_signup_creates_a_player_and_login_issues_a_working_token(client):
    response = await client.post(
        "/auth/signup", json={"username": "Ana_Paula", "password": DEFAULT_PASSWORD}
    )
    assert response.status_code == 201, response.text
    user = response.json()
    assert user["username"] == "ana_paula"
    assert user["role"] == "player"
    assert "password" not in str(user).lower()

    token = await login(client, "ANA_PAULA")
    me = await client.get("/auth/me", headers=auth(token))
    assert me.status_code == 200
    assert me.json()["id"] == user["id"]


async def test_signup_refuses_a_taken_username_weak_password_and_bad_name(client):
    body = {"username": "bruno", "password": DEFAULT_PASSWORD}
    assert (await client.post("/auth/signup", json=body)).status_code == 201
    assert_error(await client.post("/auth/signup", json=body), 409, "username_taken")
    assert_error(
        await client.post("/auth/signup", json={"username": "carla", "password": "ninechars"}),
        400,
        "weak_password",
    )
    assert_error(
        await client.post(
            "/auth/signup", json={"username": "no spaces!", "password": DEFAULT_PASSWORD}
        ),
        400,
        "validation_error",
    )


async def test_malformed_bodies_get_the_error_shape(client):
    for body in (
        {"username": "dora"},
        {"username": "dora", "password": DEFAULT_PASSWORD, "role": "operator"},
        {"username": 5, "password": DEFAULT_PASSWORD},
        [],
    ):
        assert_error(await client.post("/auth/signup", json=body), 400, "validation_error")
    response = await client.post(
        "/auth/signup", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert_error(response, 400, "validation_error")


async def test_wrong_password_and_unknown_user_are_refused_alike(client, settings):
    await create_user(settings, "edu")
    assert_error(
        await client.post("/auth/login", json={"username": "edu", "password": "wrong-password"}),
        401,
        "invalid_credentials",
    )
    assert_error(
        await client.post("/auth/login", json={"username": "nobody", "password": "whatever!!"}),
        401,
        "invalid_credentials",
    )


async def test_missing_unknown_expired_and_revoked_tokens_are_refused(client, settings):
    await create_user(settings, "fabi")
    assert_error(await client.get("/auth/me"), 401, "not_authenticated")
    assert_error(await client.get("/auth/me", headers=auth("nonsense")), 401, "not_authenticated")
    assert_error(
        await client.get("/auth/me", headers={"Authorization": "Basic abc"}),
        401,
        "not_authenticated",
    )

    expiring = await login(client, "fabi")
    connection = await asyncpg.connect(settings.database_url)
    try:
        await connection.execute(
            "UPDATE game.access_tokens SET expires_at = $1",
            dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1),
        )
    finally:
        await connection.close()
    assert_error(await client.get("/auth/me", headers=auth(expiring)), 401, "not_authenticated")

    token = await login(client, "fabi")
    assert (await client.get("/auth/me", headers=auth(token))).status_code == 200
    # a live token counts only as a Bearer header: not under another scheme, and not in an
    # HTTP request's query string (URLs end up in access logs; only a WebSocket, which
    # cannot set headers, takes ?token=)
    for headers, query in (({"Authorization": f"Basic {token}"}, ""), ({}, f"?token={token}")):
        assert_error(
            await client.get(f"/auth/me{query}", headers=headers), 401, "not_authenticated"
        )
    assert (await client.post("/auth/logout", headers=auth(token))).status_code == 204
    assert_error(await client.get("/auth/me", headers=auth(token)), 401, "not_authenticated")


async def test_a_live_token_of_a_suspended_account_is_refused(client, settings):
    """A suspension revokes the account's tokens; the token check also refuses any token of
    a suspended account, whatever left it unrevoked (defence in depth)."""
    await create_user(settings, "dora")
    token = await login(client, "dora")
    connection = await asyncpg.connect(settings.database_url)
    try:
        await connection.execute(
            "UPDATE game.users SET suspended_at = now() WHERE username = 'dora'"
        )
    finally:
        await connection.close()
    assert_error(await client.get("/auth/me", headers=auth(token)), 401, "not_authenticated")


async def test_operator_revokes_every_token_of_a_user(client, settings):
    player_id = await create_user(settings, "gabi")
    await create_user(settings, "root", role="operator")
    first, second = await login(client, "gabi"), await login(client, "gabi")
    operator = await login(client, "root")
    response = await client.post(f"/admin/users/{player_id}/revoke-tokens", headers=auth(operator))
    assert response.status_code == 200
    assert response.json() == {"revoked": 2}
    for token in (first, second):
        assert_error(await client.get("/auth/me", headers=auth(token)), 401, "not_authenticated")
    assert (await client.get("/auth/me", headers=auth(operator))).status_code == 200


@pytest.mark.parametrize(
    ("role", "status"), [("player", 403), ("compliance", 403), ("operator", 200)]
)
async def test_only_operators_pass_the_operator_guard(client, settings, role, status):
    await create_user(settings, f"user_{role}", role=role)
    token = await login(client, f"user_{role}")
    response = await client.get("/admin/users", headers=auth(token))
    if status == 403:
        assert_error(response, 403, "forbidden")
        created = await client.post(
            "/admin/users",
            headers=auth(token),
            json={"username": "sneaky", "password": DEFAULT_PASSWORD, "role": "operator"},
        )
        assert_error(created, 403, "forbidden")
    else:
        assert response.status_code == 200
        assert {user["username"] for user in response.json()} == {f"user_{role}"}


async def _users_page(client, token: str, query: str) -> list[str]:
    response = await client.get(f"/admin/users{query}", headers=auth(token))
    assert response.status_code == 200, response.text
    return [user["id"] for user in response.json()]


async def test_operator_pages_users_after_a_user_while_users_sign_up(client, settings):
    user_ids = [await create_user(settings, "root", role="operator")]
    user_ids += [await create_user(settings, f"user_{number}") for number in range(7)]
    token = await login(client, "root")
    # every three users share one creation time (ties are ordered by id), all before now
    start = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    created_at = {
        user_id: start + dt.timedelta(minutes=index // 3) for index, user_id in enumerate(user_ids)
    }
    connection = await asyncpg.connect(settings.database_url)
    try:
        # a user's creation time is fixed once written (``users_guard_update``): bypassed here
        await connection.execute("SET session_replication_role = replica")
        await connection.executemany(
            "UPDATE game.users SET created_at = $2 WHERE id = $1",
            [(uuid.UUID(user_id), at) for user_id, at in created_at.items()],
        )
    finally:
        await connection.close()
    oldest_first = sorted(user_ids, key=lambda user_id: (created_at[user_id], uuid.UUID(user_id)))

    pages = [await _users_page(client, token, "?limit=3")]
    signed_up = (
        await client.post("/auth/signup", json={"username": "late", "password": DEFAULT_PASSWORD})
    ).json()["id"]
    while pages[-1] and len(pages) < 10:
        pages.append(await _users_page(client, token, f"?limit=3&after={pages[-1][-1]}"))
    assert [len(page) for page in pages] == [3, 3, 3, 0]
    assert [user_id for page in pages for user_id in page] == [*oldest_first, signed_up]

    page = await _users_page(client, token, f"?after={oldest_first[1]}&offset=2&limit=3")
    assert page == oldest_first[4:7]
    unknown = str(uuid.uuid4())
    body = assert_error(
        await client.get(f"/admin/users?after={unknown}", headers=auth(token)),
        404,
        "user_not_found",
    )
    assert body["details"] == {"after": unknown}
    assert_error(
        await client.get("/admin/users?after=not-a-user", headers=auth(token)),
        400,
        "validation_error",
    )


async def test_operator_creates_compliance_staff(client, settings):
    await create_user(settings, "boss", role="operator")
    token = await login(client, "boss")
    response = await client.post(
        "/admin/users",
        headers=auth(token),
        json={"username": "auditor", "password": DEFAULT_PASSWORD, "role": "compliance"},
    )
    assert response.status_code == 201
    assert response.json()["role"] == "compliance"
    assert_error(
        await client.post(
            "/admin/users",
            headers=auth(token),
            json={"username": "x_y", "password": DEFAULT_PASSWORD, "role": "king"},
        ),
        400,
        "validation_error",
    )


async def test_repeated_failed_logins_are_throttled_even_with_the_right_password(client, settings):
    await create_user(settings, "hugo")
    wrong = {"username": "hugo", "password": "not-the-password"}
    for _ in range(settings.login_max_failures):
        assert_error(await client.post("/auth/login", json=wrong), 401, "invalid_credentials")
    right = {"username": "hugo", "password": DEFAULT_PASSWORD}
    response = await client.post("/auth/login", json=right)
    assert_error(response, 429, "login_throttled")
    assert response.headers["retry-after"] == str(settings.login_window_s)
    # a refused attempt is no failure: hammering on does not keep the lockout fresh
    assert_error(await client.post("/auth/login", json=wrong), 429, "login_throttled")
    connection = await asyncpg.connect(settings.database_url)
    try:
        recorded = await connection.fetchval(
            "SELECT count(*) FROM game.login_failures WHERE username = 'hugo'"
        )
    finally:
        await connection.close()
    assert recorded == settings.login_max_failures
    # Other users are not affected.
    await create_user(settings, "iris")
    await login(client, "iris")


async def test_a_successful_login_resets_the_failure_count(client, settings):
    await create_user(settings, "jade")
    wrong = {"username": "jade", "password": "not-the-password"}
    for _ in range(settings.login_max_failures - 1):
        await client.post("/auth/login", json=wrong)
    await login(client, "jade")
    for _ in range(settings.login_max_failures - 1):
        assert_error(await client.post("/auth/login", json=wrong), 401, "invalid_credentials")
    await login(client, "jade")


async def test_failed_logins_older_than_the_window_are_forgotten(client, settings):
    from app.accounts.service import AccountService
    from app.db import Database

    wrong = {"username": "nobody_here", "password": "not-the-password"}
    for _ in range(3):
        assert_error(await client.post("/auth/login", json=wrong), 401, "invalid_credentials")
    connection = await asyncpg.connect(settings.database_url)
    try:
        # two of them fell out of the window: they no longer count, and nothing else removes
        # them (the username does not exist, so no successful login ever will)
        await connection.execute(
            "UPDATE game.login_failures SET at = at - make_interval(secs => $1)"
            " WHERE id IN (SELECT id FROM game.login_failures ORDER BY id LIMIT 2)",
            float(settings.login_window_s + 1),
        )
        database = Database.connect(settings.database_url, settings)
        try:
            async with database.session() as session:
                assert await AccountService(session, settings).forget_old_login_failures() == 2
        finally:
            await database.dispose()
        assert await connection.fetchval("SELECT count(*) FROM game.login_failures") == 1
    finally:
        await connection.close()
    # every worker runs the clean-up periodically
    job = client.app.state.scheduler.get_job("login-failures")
    assert job is not None and job.trigger.interval.total_seconds() == 600


async def test_unknown_route_and_method_get_the_error_shape(client):
    assert_error(await client.get("/health/nothing"), 404, "not_found")
    assert_error(await client.delete("/health/live"), 405, "method_not_allowed")


async def test_concurrent_failed_logins_cannot_outrun_the_throttle(client, settings):
    # Guesses sent all at once must not each be checked against a failure count that none
    # of them has added to yet: no more than login_max_failures passwords are tried.
    await create_user(settings, "kiko")
    guesses = 4 * settings.login_max_failures
    wrong = [
        ("/auth/login", {"username": "kiko", "password": f"guess-number-{n}"}, "")
        for n in range(guesses)
    ]
    responses = await concurrently(client, wrong)
    statuses = [response.status_code for response in responses]
    assert set(statuses) <= {401, 429}, statuses
    for path, body, _ in wrong:  # then one at a time, until the throttle answers
        response = await client.post(path, json=body)
        statuses.append(response.status_code)
        if response.status_code == 429:
            break
    assert statuses.count(401) <= settings.login_max_failures, statuses
    right = {"username": "kiko", "password": DEFAULT_PASSWORD}
    assert_error(await client.post("/auth/login", json=right), 429, "login_throttled")


async def test_password_hashing_runs_at_most_hashing_threads_at_once(client, monkeypatch):
    # A flood of logins (unknown usernames cost a scrypt too) queues for the hashing threads
    # instead of running 40 scrypts, and their memory, at once.
    import threading
    import time

    from app.accounts import service

    running, most = 0, 0
    lock = threading.Lock()
    full = threading.Event()

    def slow_check(password, stored, settings):
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            if running >= service.HASHING_THREADS:
                full.set()
        # the first checks hold their threads until the bound is reached (a fixed 0.2 s could
        # end before a slow machine's other requests got to their hashing), then 0.2 s more,
        # for any check past the bound to be caught running alongside them
        full.wait(10)
        time.sleep(0.2)
        with lock:
            running -= 1
        return False

    monkeypatch.setattr(service, "_check_password", slow_check)
    logins = [
        ("/auth/login", {"username": f"nobody{n}", "password": "a long passphrase"}, "")
        for n in range(3 * service.HASHING_THREADS)
    ]
    responses = await concurrently(client, logins)
    assert [response.status_code for response in responses] == [401] * len(logins)
    assert most == service.HASHING_THREADS


async def test_deeply_nested_json_is_a_malformed_body_not_a_server_error(client):
    # msgspec gives up on deep nesting with RecursionError, which is not a decode error
    deep = b"[" * 100_000 + b"]" * 100_000
    for body in (deep, b'{"username": "lia", "password": "x", "extra": ' + deep + b"}"):
        response = await client.post(
            "/auth/login", content=body, headers={"content-type": "application/json"}
        )
        assert_error(response, 400, "validation_error")


async def test_a_long_forwarded_client_address_does_not_break_a_failed_login(settings):
    # Behind the deploy's nginx (a trusted proxy on loopback) uvicorn takes the client address
    # from X-Forwarded-For, which the client writes: any string, of any length.
    await create_user(settings, "otto")
    async with behind_the_proxy(settings) as send:
        response = await send("x" * 300, "otto", "not-the-password")
        assert_error(response, 401, "invalid_credentials")


async def test_a_stranger_guessing_a_password_locks_out_only_their_own_address(settings):
    await create_user(settings, "quim")
    async with behind_the_proxy(settings) as send:
        for _ in range(settings.login_max_failures):
            response = await send("203.0.113.9", "quim", "not-the-password")
            assert_error(response, 401, "invalid_credentials")
        assert_error(await send("203.0.113.9", "quim", DEFAULT_PASSWORD), 429, "login_throttled")
        # the player, from their own address, still gets in ...
        assert (await send("198.51.100.7", "quim", DEFAULT_PASSWORD)).status_code == 200
        # ... and their success does not lift the stranger's throttle
        assert_error(await send("203.0.113.9", "quim", DEFAULT_PASSWORD), 429, "login_throttled")


async def test_a_successful_login_clears_the_failures_of_its_own_address(settings):
    await create_user(settings, "rita")
    async with behind_the_proxy(settings) as send:
        for _ in range(settings.login_max_failures - 1):
            await send("198.51.100.7", "rita", "not-the-password")
        assert (await send("198.51.100.7", "rita", DEFAULT_PASSWORD)).status_code == 200
        for _ in range(settings.login_max_failures):
            response = await send("198.51.100.7", "rita", "not-the-password")
            assert_error(response, 401, "invalid_credentials")
        assert_error(await send("198.51.100.7", "rita", DEFAULT_PASSWORD), 429, "login_throttled")


async def test_the_addresses_of_one_ipv6_network_count_as_one_client(settings):
    # a subscriber is given a whole /64: a new address for every guess is still one client
    await create_user(settings, "wania")
    async with behind_the_proxy(settings) as send:
        for n in range(settings.login_max_failures):
            response = await send(f"2001:db8:1:2::{n + 1:x}", "wania", "not-the-password")
            assert_error(response, 401, "invalid_credentials")
        response = await send("2001:DB8:1:2:ffff:ffff:ffff:ffff", "wania", DEFAULT_PASSWORD)
        assert_error(response, 429, "login_throttled")
        assert (await send("2001:db8:1:3::1", "wania", DEFAULT_PASSWORD)).status_code == 200


async def test_guessing_spread_over_many_addresses_throttles_the_account(settings):
    limited = settings.model_copy(update={"login_max_failures_per_account": 8})
    await create_user(settings, "saulo")
    await create_user(settings, "tania")
    async with behind_the_proxy(limited) as send:
        for n in range(8):  # two guesses from each of four addresses
            response = await send(f"203.0.113.{n // 2}", "saulo", "not-the-password")
            assert_error(response, 401, "invalid_credentials")
        # the ninth failure of the username, from an address that has none, is refused
        assert_error(await send("198.51.100.7", "saulo", DEFAULT_PASSWORD), 429, "login_throttled")
        # the limit is the account's: another player logs in from the same addresses
        assert (await send("203.0.113.0", "tania", DEFAULT_PASSWORD)).status_code == 200


async def test_one_address_trying_many_accounts_is_throttled(settings):
    limited = settings.model_copy(update={"login_max_failures_per_address": 6})
    await create_user(settings, "ugo")
    async with behind_the_proxy(limited) as send:
        for n in range(6):
            response = await send("203.0.113.9", f"someone{n}", "a guessed password")
            assert_error(response, 401, "invalid_credentials")
        assert_error(await send("203.0.113.9", "ugo", DEFAULT_PASSWORD), 429, "login_throttled")
        # the same player from another address is not concerned
        assert (await send("198.51.100.7", "ugo", DEFAULT_PASSWORD)).status_code == 200


async def test_logins_from_an_unknown_address_are_throttled_per_username(settings):
    from app.accounts.service import AccountService
    from app.db import Database
    from app.errors import AuthenticationError, RateLimitedError

    await create_user(settings, "vera")
    limited = settings.model_copy(update={"login_max_failures_per_address": 1})
    database = Database.connect(settings.database_url, limited)
    try:
        async with database.session() as session:
            accounts = AccountService(session, limited)
            # no address: the per-address limit (1 here) does not apply to failures of
            # different usernames ...
            for n in range(3):
                with pytest.raises(AuthenticationError):
                    await accounts.login(f"nobody{n}", "a guessed password", None)
            # ... but those of one username count as from one address
            for _ in range(limited.login_max_failures):
                with pytest.raises(AuthenticationError):
                    await accounts.login("vera", "not-the-password", None)
            with pytest.raises(RateLimitedError):
                await accounts.login("vera", DEFAULT_PASSWORD, None)
            # a known address is another one
            issued = await accounts.login("vera", DEFAULT_PASSWORD, "198.51.100.7")
            assert issued.user.username == "vera"
    finally:
        await database.dispose()


async def test_revoke_tokens_counts_only_the_live_tokens(client, settings):
    player_id = await create_user(settings, "pita")
    await create_user(settings, "chief", role="operator")
    await login(client, "pita")
    connection = await asyncpg.connect(settings.database_url)
    try:  # the first token has expired by itself
        await connection.execute(
            "UPDATE game.access_tokens SET expires_at = $1",
            dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1),
        )
    finally:
        await connection.close()
    live = await login(client, "pita")
    gone = await login(client, "pita")  # revoked already (its revocation is kept as it is)
    assert (await client.post("/auth/logout", headers=auth(gone))).status_code == 204
    operator = await login(client, "chief")
    response = await client.post(f"/admin/users/{player_id}/revoke-tokens", headers=auth(operator))
    assert response.status_code == 200
    assert response.json() == {"revoked": 1}
    assert_error(await client.get("/auth/me", headers=auth(live)), 401, "not_authenticated")


async def test_a_player_changes_their_password_and_every_other_token_stops_working(
    client, settings
):
    await create_user(settings, "xana")
    other_device = await login(client, "xana")
    this_device = await login(client, "xana")
    new = "a brand new passphrase"
    response = await client.post(
        "/auth/password",
        json={"current_password": DEFAULT_PASSWORD, "new_password": new},
        headers=auth(this_device),
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"revoked_tokens": 1}
    assert (await client.get("/auth/me", headers=auth(this_device))).status_code == 200
    assert_error(await client.get("/auth/me", headers=auth(other_device)), 401, "not_authenticated")
    old = {"username": "xana", "password": DEFAULT_PASSWORD}
    assert_error(await client.post("/auth/login", json=old), 401, "invalid_credentials")
    fresh = await client.post("/auth/login", json={"username": "xana", "password": new})
    assert fresh.status_code == 200


async def test_a_refused_password_change_changes_nothing(client, settings):
    await create_user(settings, "yuri")
    other_device = await login(client, "yuri")
    token = await login(client, "yuri")
    for body, status, code in (
        ({"current_password": "not-the-password", "new_password": "x" * 12}, 401, None),
        ({"current_password": DEFAULT_PASSWORD, "new_password": "short1234"}, 400, "weak_password"),
        ({"current_password": DEFAULT_PASSWORD}, 400, "validation_error"),
        ({"current_password": DEFAULT_PASSWORD, "new_password": "x" * 12, "role": "x"}, 400, None),
    ):
        response = await client.post("/auth/password", json=body, headers=auth(token))
        assert_error(
            response,
            status,
            code or ("invalid_credentials" if status == 401 else "validation_error"),
        )
    assert_error(
        await client.post(
            "/auth/password", json={"current_password": DEFAULT_PASSWORD, "new_password": "x" * 12}
        ),
        401,
        "not_authenticated",
    )
    # the password, and every token, are as they were
    assert (await client.get("/auth/me", headers=auth(other_device))).status_code == 200
    await login(client, "yuri")


async def test_guessing_the_current_password_with_a_stolen_token_is_throttled(client, settings):
    await create_user(settings, "zeca")
    stolen = await login(client, "zeca")
    for n in range(settings.login_max_failures):
        response = await client.post(
            "/auth/password",
            json={"current_password": f"guess-number-{n}", "new_password": "x" * 12},
            headers=auth(stolen),
        )
        assert_error(response, 401, "invalid_credentials")
    # the guesses count as failed logins of the username from that address
    response = await client.post(
        "/auth/password",
        json={"current_password": DEFAULT_PASSWORD, "new_password": "x" * 12},
        headers=auth(stolen),
    )
    assert_error(response, 429, "login_throttled")
    right = {"username": "zeca", "password": DEFAULT_PASSWORD}
    assert_error(await client.post("/auth/login", json=right), 429, "login_throttled")


async def test_two_password_changes_at_once_leave_exactly_one_of_them(
    client, settings, monkeypatch
):
    # both check the current password (with nothing held) at once, against the old one: the
    # second to get the user's row finds the password changed under it and is refused.  The
    # two checks wait for each other (a fixed 0.3 s let a slow machine's second request
    # arrive after the first had committed: it failed its check, and the race went untested)
    import threading

    from app.accounts import service

    real_check = service._check_password
    calls, lock = 0, threading.Lock()
    both_checking = threading.Barrier(2, timeout=10)

    def slow_check(*args):
        nonlocal calls
        with lock:
            calls += 1
            racing = calls <= 2
        if racing:
            both_checking.wait()
        return real_check(*args)

    await create_user(settings, "aldo")
    token = await login(client, "aldo")
    monkeypatch.setattr(service, "_check_password", slow_check)
    changes = [
        (
            "/auth/password",
            {"current_password": DEFAULT_PASSWORD, "new_password": f"new passphrase {n}"},
            token,
        )
        for n in range(2)
    ]
    responses = await concurrently(client, changes)
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200, 401], [response.text for response in responses]
    winner = next(n for n, response in enumerate(responses) if response.status_code == 200)
    body = {"username": "aldo", "password": f"new passphrase {winner}"}
    assert (await client.post("/auth/login", json=body)).status_code == 200


async def test_an_operator_sets_a_lost_password_from_the_command_line(client, settings, cli):
    from app.cli import main

    await create_user(settings, "bia")
    token = await login(client, "bia")

    async def raiz(*arguments: str):
        return await asyncio.to_thread(cli.invoke, main, ["users", *arguments])

    result = await raiz("set-password", "--username", "BIA", "--password", "a new passphrase")
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1] == "password set; 1 token(s) revoked"
    assert_error(await client.get("/auth/me", headers=auth(token)), 401, "not_authenticated")
    old = {"username": "bia", "password": DEFAULT_PASSWORD}
    assert_error(await client.post("/auth/login", json=old), 401, "invalid_credentials")
    await login(client, "bia", "a new passphrase")
    # refusals change nothing
    for arguments, code in (
        (("--username", "bia", "--password", "short"), "weak_password"),
        (("--username", "nobody", "--password", "long enough passphrase"), "user_not_found"),
    ):
        result = await raiz("set-password", *arguments)
        assert result.exit_code == 2, result.output
        assert f"error: {code}:" in result.output
    await login(client, "bia", "a new passphrase")


async def test_one_address_signs_up_at_most_the_limit_of_players_within_the_window(settings):
    limited = settings.model_copy(update={"signup_max_per_address": 3})
    async with behind_the_proxy(limited) as send:
        for n in range(3):
            response = await send("203.0.113.9", f"farm{n}", DEFAULT_PASSWORD, "/auth/signup")
            assert response.status_code == 201, response.text
        refused = await send("203.0.113.9", "farm3", DEFAULT_PASSWORD, "/auth/signup")
        error = assert_error(refused, 429, "signup_throttled")
        assert error["details"] == {"retry_after_s": limited.signup_window_s}
        # nothing was created: the name is free, from another address
        created = await send("198.51.100.7", "farm3", DEFAULT_PASSWORD, "/auth/signup")
        assert created.status_code == 201, created.text
        # the same /64 is the same client; users created by an operator do not count
        await create_user(settings, "made_by_an_operator")
        ipv6 = [
            await send(f"2001:db8:5:6::{n + 1}", f"six{n}", DEFAULT_PASSWORD, "/auth/signup")
            for n in range(4)
        ]
        assert [response.status_code for response in ipv6] == [201, 201, 201, 429]
    connection = await asyncpg.connect(settings.database_url)
    try:
        # sign-ups older than the window no longer count (moved back in time past the guard
        # trigger that keeps a user's creation time)
        await connection.execute("SET session_replication_role = replica")
        await connection.execute(
            "UPDATE game.users SET created_at = created_at - make_interval(secs => $1)"
            " WHERE signup_client_key = '203.0.113.9'",
            float(limited.signup_window_s + 1),
        )
    finally:
        await connection.close()
    async with behind_the_proxy(limited) as send:
        again = await send("203.0.113.9", "farm4", DEFAULT_PASSWORD, "/auth/signup")
        assert again.status_code == 201, again.text


async def test_concurrent_signups_from_one_address_cannot_outrun_the_limit(client, settings):
    # the test client's address is one client ("testclient"); the limit is 20 by default
    limit = settings.signup_max_per_address
    signups = [
        ("/auth/signup", {"username": f"rush{n}", "password": DEFAULT_PASSWORD}, "")
        for n in range(limit + 5)
    ]
    responses = await concurrently(client, signups)
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [201] * limit + [429] * 5, statuses


async def test_a_login_checked_against_a_password_changed_meanwhile_gets_no_token(
    client, settings, monkeypatch
):
    # A login checks the password, then issues a token: a change committed in between (a
    # player who learnt that somebody knows their password) must not leave that somebody
    # with a working token.  The login's check is held until the change has committed.
    await create_user(settings, "dino")
    token = await login(client, "dino")
    checked, release = hold_the_first_password_check(monkeypatch)  # the login's
    old = {"username": "dino", "password": DEFAULT_PASSWORD}
    change = {"current_password": DEFAULT_PASSWORD, "new_password": "a brand new passphrase"}
    loop = asyncio.get_running_loop()
    with from_threads(client) as (sync, pool):
        late = loop.run_in_executor(pool, lambda: sync.post("/auth/login", json=old))
        assert await asyncio.to_thread(checked.wait, 30)
        changed = await loop.run_in_executor(
            pool, lambda: sync.post("/auth/password", json=change, headers=auth(token))
        )
        release.set()
        assert changed.status_code == 200, changed.text
        response = await late
    if response.status_code == 200:
        stale = response.json()["token"]
        me = await client.get("/auth/me", headers=auth(stale))
        pytest.fail(f"a token was issued for the old password (/auth/me: {me.status_code})")
    assert_error(response, 401, "invalid_credentials")
    assert (await client.get("/auth/me", headers=auth(token))).status_code == 200


async def test_signing_up_with_a_taken_username_costs_no_password_hash(
    client, settings, monkeypatch
):
    # A refused sign-up is never counted against the address's limit: one for a taken name
    # must then cost no scrypt, or a script could hold the hashing threads without end.
    from app.accounts import service

    await create_user(settings, "taken")
    hashed = 0
    real_hash = service.hash_password

    def counting_hash(*args):
        nonlocal hashed
        hashed += 1
        return real_hash(*args)

    monkeypatch.setattr(service, "hash_password", counting_hash)
    body = {"username": "Taken", "password": DEFAULT_PASSWORD}
    for _ in range(settings.signup_max_per_address + 1):
        assert_error(await client.post("/auth/signup", json=body), 409, "username_taken")
    assert hashed == 0
    created = await client.post("/auth/signup", json={**body, "username": "free_name"})
    assert created.status_code == 201, created.text
    assert hashed == 1


async def test_a_password_change_waiting_to_hash_holds_no_lock_and_revokes_logins_made_meanwhile(
    client, settings, monkeypatch
):
    # The change's check is held (as if queued behind a flood for the hashing threads): a
    # login of the same player meanwhile is not held up by the user's row, and the token it
    # got is revoked by the change, which commits after it.
    await create_user(settings, "eliane")
    token = await login(client, "eliane")
    checked, release = hold_the_first_password_check(monkeypatch)  # the change's
    change = {"current_password": DEFAULT_PASSWORD, "new_password": "a brand new passphrase"}
    loop = asyncio.get_running_loop()
    with from_threads(client) as (sync, pool):
        pending = loop.run_in_executor(
            pool, lambda: sync.post("/auth/password", json=change, headers=auth(token))
        )
        try:
            assert await asyncio.to_thread(checked.wait, 30)
            meanwhile = await asyncio.wait_for(login(client, "eliane"), timeout=10)
        finally:
            release.set()
        changed = await pending
    assert changed.status_code == 200, changed.text
    assert changed.json() == {"revoked_tokens": 1}
    assert_error(await client.get("/auth/me", headers=auth(meanwhile)), 401, "not_authenticated")
    assert (await client.get("/auth/me", headers=auth(token))).status_code == 200
