"""``GET /tables``: newest first, pages that neither skip nor repeat a table (by offset on a
still lobby, by ``before`` while tables are created, ties on the creation time included), the
status filter, and a 400 for every malformed query parameter (nothing silently ignored)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import asyncpg
import pytest

from tests.helpers import assert_error, auth
from tests.integration.tables.helpers import create_table, operator, player

pytestmark = pytest.mark.asyncio

MAX_PAGES = 20
"""More than any walk here takes."""


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
        "?before=",
        "?before=x",
        "?before=1",
    ],
)
async def test_a_malformed_query_parameter_is_a_400(client, settings, query):
    op = await operator(client, settings)
    _, creator = await player(client, settings, "creator", 0, op)
    await create_table(client, creator, seat_count=2, entry_cents=0)
    response = await client.get(f"/tables{query}", headers=auth(creator))
    assert_error(response, 400, "validation_error")


async def _created_in_threes(database_url: str, table_ids: list[str]) -> list[str]:
    """Give every three tables of ``table_ids`` one creation time (ties, as tables opened in
    the same microsecond would have), the later three an earlier time; the ids, newest first
    by (creation time, id), computed here rather than by the database."""
    start = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)  # before any table created next
    created_at = {
        table_id: start - dt.timedelta(minutes=index // 3)
        for index, table_id in enumerate(table_ids)
    }
    connection = await asyncpg.connect(database_url)
    try:
        # the creation time is fixed once written (``tables_guard_update``): bypassed here
        await connection.execute("SET session_replication_role = replica")
        await connection.executemany(
            "UPDATE game.tables SET created_at = $2 WHERE id = $1",
            [(uuid.UUID(table_id), at) for table_id, at in created_at.items()],
        )
    finally:
        await connection.close()
    return sorted(
        table_ids, key=lambda table_id: (-created_at[table_id].timestamp(), uuid.UUID(table_id))
    )


async def _walk(client: Any, token: str, query: str, on_page: Any = None) -> list[list[str]]:
    """Every page of ``GET /tables?{query}``, each after the last table of the one before;
    ``on_page(n)`` runs after page ``n`` is read."""
    pages: list[list[str]] = []
    while len(pages) < MAX_PAGES:  # a page that does not move on would repeat forever
        before = f"&before={pages[-1][-1]}" if pages else ""
        page = [table["id"] for table in await listing(client, token, f"?{query}{before}")]
        if not page:
            return pages
        pages.append(page)
        if on_page is not None:
            await on_page(len(pages))
    raise AssertionError(f"still listing after {MAX_PAGES} pages: {pages[-2:]}")


async def test_paging_before_a_table_lists_every_table_once_while_tables_are_created(
    client, settings
):
    op = await operator(client, settings)
    _, creator = await player(client, settings, "creator", 0, op)
    created = [await create_table(client, creator, seat_count=2, entry_cents=0) for _ in range(10)]
    newest_first = await _created_in_threes(settings.database_url, [t["id"] for t in created])
    added: list[str] = []

    async def a_table_is_created(pages_read: int) -> None:
        if pages_read == 1:
            # newer than every table listed: an offset would now show page 1's last table again
            # (created by the operator: the player already has 10 tables waiting, the limit)
            added.append((await create_table(client, op, seat_count=2, entry_cents=0))["id"])
            shifted = await listing(client, creator, "?limit=4&offset=4")
            assert shifted[0]["id"] == newest_first[3]

    pages = await _walk(client, creator, "limit=4", a_table_is_created)
    assert [len(page) for page in pages] == [4, 4, 2]
    assert [table_id for page in pages for table_id in page] == newest_first
    assert [t["id"] for t in await listing(client, creator, "?limit=1")] == added

    # offset still works, counted from after ``before``; a page of ``before`` at the end is empty
    after_third = await listing(client, creator, f"?before={newest_first[2]}&offset=2&limit=3")
    assert [table["id"] for table in after_third] == newest_first[5:8]
    assert await listing(client, creator, f"?before={newest_first[-1]}") == []


async def test_paging_the_open_tables_before_a_table_that_has_since_closed(client, settings):
    op = await operator(client, settings)
    _, creator = await player(client, settings, "creator", 0, op)
    created = [await create_table(client, creator, seat_count=2, entry_cents=0) for _ in range(9)]
    newest_first = await _created_in_threes(settings.database_url, [t["id"] for t in created])
    for table_id in newest_first[1::3]:
        cancelled = await client.post(f"/tables/{table_id}/cancel", headers=auth(creator))
        assert cancelled.status_code == 200, cancelled.text
    still_open = [table_id for table_id in newest_first if table_id not in newest_first[1::3]]

    async def the_last_one_listed_closes(pages_read: int) -> None:
        if pages_read == 1:
            # the anchor is no longer open: the next page still starts right after it
            cancelled = await client.post(f"/tables/{still_open[3]}/cancel", headers=auth(creator))
            assert cancelled.status_code == 200, cancelled.text
            # an offset would now hide the next open table
            shifted = await listing(client, creator, "?status=open&limit=4&offset=4")
            assert shifted[0]["id"] == still_open[5]

    pages = await _walk(client, creator, "status=open&limit=4", the_last_one_listed_closes)
    assert [table_id for page in pages for table_id in page] == still_open
    gone = await _walk(client, creator, "status=cancelled&limit=2")
    assert [table_id for page in gone for table_id in page] == [
        table_id
        for table_id in newest_first
        if table_id not in still_open or table_id == still_open[3]
    ]


async def test_paging_before_an_unknown_table_is_a_404(client, settings):
    op = await operator(client, settings)
    _, creator = await player(client, settings, "creator", 0, op)
    await create_table(client, creator, seat_count=2, entry_cents=0)
    unknown = str(uuid.uuid4())
    for query in (f"?before={unknown}", f"?status=open&before={unknown}&offset=1"):
        response = await client.get(f"/tables{query}", headers=auth(creator))
        body = assert_error(response, 404, "table_not_found")
        assert body["details"] == {"before": unknown}
