"""``GET /audit/checkpoints``: newest first, paged back by ``before`` (a checkpoint id: the
page lists smaller ids) without repeating or skipping one while checkpoints are signed; any
id is a bound, one that names no checkpoint included; ``offset`` counts from after it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import assert_error, auth
from tests.integration.compliance.helpers import staff

pytestmark = pytest.mark.asyncio

MAX_PAGES = 20
"""More than any walk here takes."""


async def _sign(client: Any, token: str) -> int:
    """A checkpoint signed now (of the empty tree: no round is needed); its id."""
    response = await client.post("/compliance/checkpoints/", headers=auth(token))
    assert response.status_code == 200, response.text
    return int(response.json()["id"])


async def _listed(client: Any, query: str = "") -> list[int]:
    response = await client.get(f"/audit/checkpoints{query}")
    assert response.status_code == 200, response.text
    return [int(checkpoint["id"]) for checkpoint in response.json()]


async def test_paging_back_by_id_lists_every_checkpoint_once_while_checkpoints_are_signed(
    client, settings
):
    auditor = await staff(client, settings)
    signed = [await _sign(client, auditor) for _ in range(7)]
    newest_first = sorted(signed, reverse=True)
    assert await _listed(client) == newest_first

    pages = [await _listed(client, "?limit=3")]
    # signed between two pages: an offset would show the first page's last checkpoint again
    latest = await _sign(client, auditor)
    assert (await _listed(client, "?limit=3&offset=3"))[0] == pages[0][-1]
    while pages[-1] and len(pages) < MAX_PAGES:
        pages.append(await _listed(client, f"?limit=3&before={pages[-1][-1]}"))
    assert [len(page) for page in pages] == [3, 3, 1, 0]
    assert [checkpoint for page in pages for checkpoint in page] == newest_first
    assert await _listed(client, "?limit=1") == [latest]

    assert await _listed(client, f"?before={newest_first[1]}&offset=2&limit=2") == newest_first[4:6]


async def test_an_id_that_names_no_checkpoint_is_still_a_bound(client, settings):
    auditor = await staff(client, settings)
    signed = sorted([await _sign(client, auditor) for _ in range(3)], reverse=True)
    assert await _listed(client, f"?before={signed[0] + 1000}") == signed
    assert await _listed(client, f"?before={signed[-1]}") == []
    assert await _listed(client, "?before=1") == []
    assert await _listed(client, f"?before={2**62}") == signed


@pytest.mark.parametrize("before", ["0", "-1", str(2**62 + 1), "x", "1.5", ""])
async def test_a_malformed_before_is_a_400(client, before):
    assert_error(await client.get(f"/audit/checkpoints?before={before}"), 400, "validation_error")
