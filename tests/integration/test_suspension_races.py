"""Suspensions against what the account itself, or another operator, does at the same moment:
a request authenticated just before the suspension committed must not act for the account
after it; and what a suspended account is told is documented."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from tests.helpers import (
    DEFAULT_PASSWORD,
    assert_error,
    auth,
    create_user,
    from_threads,
    hold_the_first_password_check,
    login,
    sent_while_suspending,
    until_waiting_on_locks,
)
from tests.integration.tables.helpers import operator
from tests.integration.tables.scenario import sql

pytestmark = pytest.mark.asyncio

REASON = {"reason": "account taken over, ticket 5120"}


async def test_the_login_documents_its_account_suspended_refusal(client):
    # a public route gets no 403 by default (no role to lack); a login does answer one
    schema = (await client.get("/schema/openapi.json")).json()
    responses = schema["paths"]["/auth/login"]["post"]["responses"]
    assert "403" in responses
    assert "account_suspended" in responses["403"]["description"]
    assert responses["403"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorBody"
    }


async def _password_hash(settings, user_id: str) -> str:
    rows = await sql(
        settings, "SELECT password_hash FROM game.users WHERE id = :id", id=uuid.UUID(user_id)
    )
    return str(rows[0][0])


async def test_a_password_change_hashing_while_the_account_is_suspended_changes_nothing(
    client, settings, monkeypatch
):
    # A taken-over account is suspended while the intruder's password change hashes (two
    # scrypts, nothing held): the change must not land after the suspension, or the intruder's
    # password would be the account's once it is reinstated for its owner.
    op = await operator(client, settings)
    user_id = await create_user(settings, "dino")
    token = await login(client, "dino")
    before = await _password_hash(settings, user_id)
    checked, release = hold_the_first_password_check(monkeypatch)  # the change's
    change = {"current_password": DEFAULT_PASSWORD, "new_password": "the intruder's choice"}
    loop = asyncio.get_running_loop()
    with from_threads(client) as (sync, pool):
        pending = loop.run_in_executor(
            pool, lambda: sync.post("/auth/password", json=change, headers=auth(token))
        )
        try:
            assert await asyncio.to_thread(checked.wait, 30)
            suspended = await client.post(
                f"/admin/users/{user_id}/suspend", json=REASON, headers=auth(op)
            )
        finally:
            release.set()
        changed = await pending
    assert suspended.status_code == 200, suspended.text
    assert_error(changed, 403, "account_suspended")
    assert await _password_hash(settings, user_id) == before
    reinstated = await client.post(
        f"/admin/users/{user_id}/reinstate", json={"reason": "owner verified"}, headers=auth(op)
    )
    assert reinstated.status_code == 200, reinstated.text
    await login(client, "dino")  # the owner's password
    intruder = {"username": "dino", "password": "the intruder's choice"}
    assert_error(await client.post("/auth/login", json=intruder), 401, "invalid_credentials")


async def _me(client, token: str) -> str:
    return str((await client.get("/auth/me", headers=auth(token))).json()["id"])


async def test_two_operators_suspending_each_other_at_once_lock_out_only_one(client, settings):
    # Both requests are authenticated, then wait (the two rows are held): without ordering
    # them, each suspended the other and no operator was left; one of them acted as a
    # suspended account.  The second to reach the rows finds its own account suspended.
    ana, bia = await operator(client, settings, "ana_op"), await operator(client, settings, "bia")
    ana_id, bia_id = await _me(client, ana), await _me(client, bia)
    holder = await asyncpg.connect(settings.database_url)
    try:
        held = holder.transaction()
        await held.start()
        await holder.execute(
            "SELECT 1 FROM game.users WHERE id = ANY($1::uuid[]) FOR SHARE",
            [uuid.UUID(ana_id), uuid.UUID(bia_id)],
        )
        loop = asyncio.get_running_loop()
        with from_threads(client) as (sync, pool):

            def suspend(user_id: str, token: str):
                path = f"/admin/users/{user_id}/suspend"
                return sync.post(path, json=REASON, headers=auth(token))

            pending = [
                loop.run_in_executor(pool, suspend, bia_id, ana),
                loop.run_in_executor(pool, suspend, ana_id, bia),
            ]
            await until_waiting_on_locks(holder, 2)
            await held.rollback()
            responses = [await request for request in pending]
    finally:
        await holder.close()
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200, 403], [response.text for response in responses]
    refused = next(response for response in responses if response.status_code == 403)
    assert_error(refused, 403, "account_suspended")
    records = await sql(
        settings, "SELECT user_id::text, actor_id::text FROM game.account_suspensions"
    )
    assert len(records) == 1
    ((suspended, actor),) = records
    assert {suspended, actor} == {ana_id, bia_id}
    still = "ana_op" if actor == ana_id else "bia"
    await login(client, still)


async def test_an_operator_suspended_meanwhile_cannot_reinstate_itself(client, settings):
    # A taken-over operator account sends its own reinstatement as another operator's
    # suspension of it commits: it must stay suspended.
    ana = await operator(client, settings, "ana_op")
    ana_id = await _me(client, ana)
    (response,) = await sent_while_suspending(
        client, settings, ana_id, (f"/admin/users/{ana_id}/reinstate", REASON, ana)
    )
    assert_error(response, 403, "account_suspended")
    rows = await sql(
        settings,
        "SELECT suspended_at IS NOT NULL FROM game.users WHERE id = :id",
        id=uuid.UUID(ana_id),
    )
    assert rows == [(True,)]
    assert await sql(settings, "SELECT count(*) FROM game.account_suspensions") == [(0,)]
