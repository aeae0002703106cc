"""Suspensions against what the account itself, or another operator, does at the same moment:
a request authenticated just before the suspension committed must not act for the account
after it; and what a suspended account is told is documented."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.helpers import (
    DEFAULT_PASSWORD,
    assert_error,
    auth,
    create_user,
    from_threads,
    hold_the_first_password_check,
    login,
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
