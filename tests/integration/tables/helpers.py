"""Helpers for table tests: users with money, tables, views."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg

from app.games.bots import HeuristicBot
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


async def refuse_chance_records(database_url: str) -> None:
    """From now on the database refuses every round's chance records (a stand-in for any
    failure while a deal is written: a check, a timeout, a full disk): the transaction that
    deals rolls back."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "ALTER TABLE game.round_log ADD CONSTRAINT test_no_chance "
            "CHECK (kind <> 'chance') NOT VALID"
        )
    finally:
        await connection.close()


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


async def play_to_the_end(client, table_id: str, tokens: list[str]) -> dict[str, Any]:
    """Heuristic bots play every seat of ``tokens`` through the API (polling their views)
    until the match ends; returns the first player's final view."""
    bots: dict[str, HeuristicBot] = {}
    for _ in range(5000):
        current = [await view(client, token, table_id) for token in tokens]
        if current[0]["status"] == "finished":
            break
        acted = False
        for token, seen in zip(tokens, current, strict=True):
            game = seen["game_view"]
            seat = seen["you"]["match_seat"]
            if game is None or seat is None:
                continue
            action = bots.setdefault(token, HeuristicBot(seat)).act(game)
            if action is None:
                continue
            action.pop("seat", None)
            response = await client.post(
                f"/tables/{table_id}/actions",
                json={"action_id": f"{seen['step']}-{action['type']}", "action": action},
                headers=auth(token),
            )
            assert response.status_code in (200, 409, 422), response.text
            acted = True
        if not acted:
            await asyncio.sleep(0.03)
    final = await view(client, tokens[0], table_id)
    assert final["status"] == "finished", final
    return final
