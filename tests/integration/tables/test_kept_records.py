"""The fee-rate history and the record of applied actions are insert-only: the database
refuses UPDATE, DELETE and TRUNCATE on them to every role, the schemas' owner included
(migration ``game_0007``), and the service still adds to them and answers retries from them."""

from __future__ import annotations

import asyncpg
import pytest

from tests.helpers import auth
from tests.integration.tables.scenario import SLOW_TIMERS, start_game

pytestmark = pytest.mark.asyncio

HANDS = {
    0: ["9C", "2D", "5S", "8S", "JS", "3H", "QC", "6D", "10D"],
    1: ["4H", "8H", "JD", "KC", "10S", "3D", "7S", "QS", "KH"],
    2: ["2H", "6C", "9D", "QH", "4D", "8D", "5H", "10C", "3C"],
}
REFUSED = [
    ("fee_rates", "UPDATE game.fee_rates SET fee_bps = 0"),
    ("fee_rates", "UPDATE game.fee_rates SET reason = 'typo' WHERE set_by IS NOT NULL"),
    ("fee_rates", "UPDATE game.fee_rates SET set_at = set_at - interval '1 day'"),
    ("fee_rates", "DELETE FROM game.fee_rates WHERE set_by IS NOT NULL"),
    ("fee_rates", "TRUNCATE game.fee_rates CASCADE"),
    ("table_actions", "UPDATE game.table_actions SET request_sha256 = sha256('other')"),
    ("table_actions", "UPDATE game.table_actions SET step = step + 1"),
    ("table_actions", "DELETE FROM game.table_actions"),
    ("table_actions", "TRUNCATE game.table_actions"),
]
KEPT = (
    "SELECT * FROM game.fee_rates ORDER BY id",
    "SELECT * FROM game.table_actions ORDER BY table_id, user_id, action_id",
)


async def kept(connection: asyncpg.Connection) -> list[list[asyncpg.Record]]:
    return [await connection.fetch(query) for query in KEPT]


async def test_fee_rates_and_applied_actions_cannot_be_changed_or_deleted(
    client, settings, database_url
):
    game = await start_game(
        client,
        settings,
        players=3,
        dealer=2,
        hands=HANDS,
        stock=["5C", "AH"],
        options={"lives": 3, **SLOW_TIMERS},
    )
    changed = await client.post(
        "/admin/fee-rates",
        json={"fee_bps": 2_000, "reason": "test"},
        headers=auth(game.operator),
    )
    assert changed.status_code == 201, changed.text
    first = await game.post(0, {"type": "decide", "mandar": True}, action_id="decide-1")
    assert first.status_code == 200 and first.json()["replayed"] is False, first.text

    # the test database's owner, a superuser: only session_replication_role would skip the
    # triggers
    connection = await asyncpg.connect(database_url)
    try:
        before = await kept(connection)
        assert [len(rows) for rows in before] == [2, 1]
        for table, statement in REFUSED:
            with pytest.raises(asyncpg.RaiseError, match=f"game.{table} is append-only"):
                await connection.execute(statement)
        assert await kept(connection) == before
    finally:
        await connection.close()

    # the service still appends to both and answers a retry from the kept action
    again = await game.post(0, {"type": "decide", "mandar": True}, action_id="decide-1")
    assert again.status_code == 200 and again.json()["replayed"] is True, again.text
    assert again.json()["step"] == first.json()["step"]
    changed = await client.post(
        "/admin/fee-rates",
        json={"fee_bps": 1_500, "reason": "again"},
        headers=auth(game.operator),
    )
    assert changed.status_code == 201, changed.text
    history = (await client.get("/admin/fee-rates", headers=auth(game.operator))).json()
    assert [rate["fee_bps"] for rate in history] == [1_500, 2_000, 1_000]
