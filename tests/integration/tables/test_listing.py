"""``GET /tables``: newest first, pages that neither skip nor repeat a table, the status
filter, and a 400 for every malformed query parameter (nothing silently ignored)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import assert_error, auth
from tests.integration.tables.helpers import create_table, operator, player

pytestmark = pytest.mark.asyncio


async def listing(client: Any, token: str, query: str = "") -> list[dict[str, Any]]:
    response = await client.get(f"/tables{query}", headers=auth(token))
    assert response.status_code == 200, response.text
    return list(response.json())


async def test_pages_and_the_status_filter_list_every_table_once(client, settings):
    op = await operator(client, settings)
    _, creator = await player(client, settings, "creator", 0, op)
    created = [await create_table(client, creator, seat_count=2, entry_cents=0) for _ in range(7)]
    for table in created[:2]:
        cancelled = await client.post(f"/tables/{table['id']}/cancel", headers=auth(creator))
        assert cancelled.status_code == 200, cancelled.text
    newest_first = [table["id"] for table in reversed(created)]

    assert [table["id"] for table in await listing(client, creator)] == newest_first
    paged: list[str] = []
    for offset in range(0, 9, 3):
        page = await listing(client, creator, f"?limit=3&offset={offset}")
        assert len(page) == min(3, max(0, 7 - offset))
        paged += [table["id"] for table in page]
    assert paged == newest_first

    opened = await listing(client, creator, "?status=open")
    assert [table["id"] for table in opened] == newest_first[:5]
    assert {table["status"] for table in opened} == {"open"}
    gone = await listing(client, creator, "?status=cancelled&limit=1&offset=1")
    assert [table["id"] for table in gone] == [created[0]["id"]]
    assert await listing(client, creator, "?status=running") == []


@pytest.mark.parametrize(
    "query",
    [
        "?status=",
        "?status=OPEN",
        "?status=open%0A",  # Python's $ matches before a final newline
        "?status=open%00",
        "?status=opened",
        "?limit=0",
        "?limit=201",
        "?limit=1.5",
        "?limit=ten",
        "?limit=5%0A",
        "?offset=-1",
        "?offset=1000001",
        "?offset=x",
    ],
)
async def test_a_malformed_query_parameter_is_a_400(client, settings, query):
    op = await operator(client, settings)
    _, creator = await player(client, settings, "creator", 0, op)
    await create_table(client, creator, seat_count=2, entry_cents=0)
    response = await client.get(f"/tables{query}", headers=auth(creator))
    assert_error(response, 400, "validation_error")
