"""A player's own self-exclusion: suspended for a period nobody can shorten, ending by itself."""

from __future__ import annotations

import datetime as dt
import uuid

import asyncpg
import pytest

from app.accounts.suspension import SuspensionService
from app.db import Database
from tests.helpers import DEFAULT_PASSWORD, assert_error, auth, login
from tests.integration.tables.helpers import create_table, operator, player
from tests.integration.tables.scenario import seat

pytestmark = pytest.mark.asyncio


async def _exclude(client, token: str, body) -> object:
    return await client.post("/players/me/self-exclusion", json=body, headers=auth(token))


async def _history(client, op: str, user_id: str) -> list[dict]:
    response = await client.get(f"/admin/users/{user_id}/suspensions", headers=auth(op))
    assert response.status_code == 200, response.text
    return list(response.json())


async def _end_self_exclusions(settings) -> int:
    assert settings.database_url is not None
    database = Database.connect(settings.database_url, settings)
    try:
        async with database.session() as session:
            return await SuspensionService(session).end_self_exclusions()
    finally:
        await database.dispose()


async def _move_the_end(settings, user_id: str, to: str = "- interval '1 second'") -> None:
    """As if the self-exclusion's days had passed: its end, now() ``to``, on the account and
    in its kept record (insert-only: its triggers are skipped, as only a superuser can)."""
    connection = await asyncpg.connect(settings.database_url)
    try:
        await connection.execute("SET session_replication_role = replica")
        for table, column in (("users", "id"), ("account_suspensions", "user_id")):
            field = "suspended_until" if table == "users" else "until"
            await connection.execute(
                f"UPDATE game.{table} SET {field} = now() {to} "
                f"WHERE {column} = $1 AND {field} IS NOT NULL",
                uuid.UUID(user_id),
            )
    finally:
        await connection.close()


async def test_a_player_excludes_themselves_and_it_ends_by_itself(client, settings):
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 1_000, op)
    other = await login(client, "ana")
    table = await create_table(client, op)
    await seat(client, ana, table["id"])

    response = await _exclude(client, ana, {"days": 30})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["revoked_tokens"], body["released_seats"]) == (2, 1)
    until = dt.datetime.fromisoformat(body["user"]["suspended_until"])
    expected = dt.datetime.now(dt.UTC) + dt.timedelta(days=30)
    assert abs((until - expected).total_seconds()) < 60
    assert body["change"]["reason"] == "self-exclusion for 30 days"
    assert dt.datetime.fromisoformat(body["change"]["until"]) == until
    assert body["change"]["actor_id"] == ana_id
    for token in (ana, other):
        assert_error(await client.get("/auth/me", headers=auth(token)), 401, "not_authenticated")
    refused = await client.post(
        "/auth/login", json={"username": "ana", "password": DEFAULT_PASSWORD}
    )
    error = assert_error(refused, 403, "account_suspended")
    assert dt.datetime.fromisoformat(error["details"]["suspended_until"]) == until
    # nobody lifts it sooner, and the job leaves it while it runs
    reinstating = await client.post(
        f"/admin/users/{ana_id}/reinstate", json={"reason": "she asked"}, headers=auth(op)
    )
    assert_error(reinstating, 409, "self_exclusion_running")
    assert await _end_self_exclusions(settings) == 0
    assert_error(
        await client.post("/auth/login", json={"username": "ana", "password": DEFAULT_PASSWORD}),
        403,
        "account_suspended",
    )

    # a minute before its end it still runs, to the second
    await _move_the_end(settings, ana_id, to="+ interval '1 minute'")
    assert await _end_self_exclusions(settings) == 0
    await _move_the_end(settings, ana_id)
    assert await _end_self_exclusions(settings) == 1
    assert await _end_self_exclusions(settings) == 0
    await login(client, "ana")
    history = await _history(client, op, ana_id)
    assert [(h["action"], h["actor_id"], h["reason"]) for h in history] == [
        ("suspend", ana_id, "self-exclusion for 30 days"),
        ("reinstate", None, "self-exclusion ended"),
    ]
    assert dt.datetime.fromisoformat(history[0]["until"]) < dt.datetime.now(dt.UTC)  # moved


async def test_an_operators_suspension_over_a_self_exclusion_does_not_end_by_itself(
    client, settings
):
    op = await operator(client, settings)
    bia_id, bia = await player(client, settings, "bia", 0, op)
    assert (await _exclude(client, bia, {"days": 1})).status_code == 200
    suspended = await client.post(
        f"/admin/users/{bia_id}/suspend", json={"reason": "fraud review"}, headers=auth(op)
    )
    assert suspended.status_code == 200, suspended.text
    assert suspended.json()["user"]["suspended_until"] is None
    again = await client.post(
        f"/admin/users/{bia_id}/suspend", json={"reason": "again"}, headers=auth(op)
    )
    assert_error(again, 409, "already_suspended")
    assert await _end_self_exclusions(settings) == 0  # nothing ends by itself any more
    login_refused = await client.post(
        "/auth/login", json={"username": "bia", "password": DEFAULT_PASSWORD}
    )
    assert "suspended_until" not in assert_error(login_refused, 403, "account_suspended")["details"]
    # suspending, then reinstating, does not end the self-exclusion early ...
    reinstating = await client.post(
        f"/admin/users/{bia_id}/reinstate", json={"reason": "cleared"}, headers=auth(op)
    )
    assert_error(reinstating, 409, "self_exclusion_running")
    # ... once it has ended, the operator's suspension lasts until an operator lifts it
    await _move_the_end(settings, bia_id)
    assert await _end_self_exclusions(settings) == 0
    reinstated = await client.post(
        f"/admin/users/{bia_id}/reinstate", json={"reason": "cleared"}, headers=auth(op)
    )
    assert reinstated.status_code == 200, reinstated.text
    await login(client, "bia")


async def test_an_ended_self_exclusion_an_operator_lifts_before_the_job(client, settings):
    op = await operator(client, settings)
    cid_id, cid = await player(client, settings, "cid", 0, op)
    assert (await _exclude(client, cid, {"days": 7})).status_code == 200
    await _move_the_end(settings, cid_id)
    reinstated = await client.post(
        f"/admin/users/{cid_id}/reinstate", json={"reason": "it ended"}, headers=auth(op)
    )
    assert reinstated.status_code == 200, reinstated.text
    assert reinstated.json()["user"]["suspended_until"] is None
    assert await _end_self_exclusions(settings) == 0
    await login(client, "cid")


async def test_refused_self_exclusions_change_nothing(client, settings):
    op = await operator(client, settings)
    dani_id, dani = await player(client, settings, "dani", 0, op)
    for body in (
        {"days": 0},
        {"days": 3651},
        {"days": "7"},
        {"days": 1.5},
        {},
        {"days": 7, "x": 1},
    ):
        assert_error(await _exclude(client, dani, body), 400, "validation_error")
    assert_error(await _exclude(client, op, {"days": 7}), 403, "forbidden")  # players only
    assert (await client.get("/auth/me", headers=auth(dani))).status_code == 200
    assert await _history(client, op, dani_id) == []
