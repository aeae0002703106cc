"""Helpers for table tests: users with money, tables, views."""

from __future__ import annotations

import uuid
from typing import Any

from tests.helpers import auth, create_user, login

FAST_TIMERS = {
    "decision_timeout_ms": 2_000,
    "turn_timeout_ms": 2_000,
    "claim_window_ms": 50,
}


async def operator(client, settings, name: str = "operator") -> str:
    await create_user(settings, name, role="operator")
    return await login(client, name)


async def player(
    client, settings, name: str, deposit_cents: int, operator_token: str
) -> tuple[str, str]:
    """A player with ``deposit_cents`` in the wallet: (user id, token)."""
    user_id = await create_user(settings, name)
    token = await login(client, name)
    if deposit_cents:
        response = await client.post(
            f"/admin/wallets/{user_id}/deposits",
            json={"amount_cents": deposit_cents},
            headers={**auth(operator_token), "Idempotency-Key": f"dep-{uuid.uuid4()}"},
        )
        assert response.status_code == 201, response.text
    return user_id, token


async def balance(client, token: str) -> int:
    response = await client.get("/wallet", headers=auth(token))
    assert response.status_code == 200, response.text
    return int(response.json()["balance_cents"])


async def create_table(client, token: str, **body: Any) -> dict[str, Any]:
    payload = {"seat_count": 4, "entry_cents": 500, **body}
    response = await client.post("/tables", json=payload, headers=auth(token))
    assert response.status_code == 201, response.text
    return dict(response.json())


async def view(client, token: str, table_id: str) -> dict[str, Any]:
    response = await client.get(f"/tables/{table_id}", headers=auth(token))
    assert response.status_code == 200, response.text
    return dict(response.json())
