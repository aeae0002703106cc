"""Suspensions against what the account itself, or another operator, does at the same moment:
a request authenticated just before the suspension committed must not act for the account
after it; and what a suspended account is told is documented."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.asyncio


async def test_the_login_documents_its_account_suspended_refusal(client):
    # a public route gets no 403 by default (no role to lack); a login does answer one
    schema = (await client.get("/schema/openapi.json")).json()
    responses = schema["paths"]["/auth/login"]["post"]["responses"]
    assert "403" in responses
    assert "account_suspended" in responses["403"]["description"]
    assert responses["403"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorBody"
    }
