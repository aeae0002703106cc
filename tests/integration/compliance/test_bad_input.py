"""Bad input to the compliance and access-log routes: a 400 with the error body, nothing
written (no access-log row for a refused read)."""

from __future__ import annotations

import pytest

from tests.helpers import assert_error, auth
from tests.integration.compliance.helpers import staff
from tests.integration.tables.helpers import operator

pytestmark = pytest.mark.asyncio


async def _access_log(client, operator_token):
    response = await client.get("/admin/access-log", headers=auth(operator_token))
    assert response.status_code == 200, response.text
    return response.json()


async def test_search_dates_outside_the_databases_range_are_refused(client, settings):
    auditor = await staff(client, settings)
    op = await operator(client, settings)
    for query in (
        "from=9999-12-31T23:59:59-05:00",
        "to=0001-01-01T00:00:00%2B05:00",
    ):
        response = await client.get(f"/compliance/rounds?{query}", headers=auth(auditor))
        assert_error(response, 400, "validation_error")
    assert await _access_log(client, op) == []
    # a time without an offset is UTC (not the server's local time)
    response = await client.get(
        "/compliance/rounds?from=2024-01-01T00:00:00", headers=auth(auditor)
    )
    assert response.status_code == 200, response.text
    [row] = await _access_log(client, op)
    assert row["details"]["from"] == "2024-01-01T00:00:00+00:00"


async def test_an_access_log_actor_with_a_nul_character_is_refused(client, settings):
    op = await operator(client, settings)
    response = await client.get("/admin/access-log?actor=cli%3Aroot%00", headers=auth(op))
    assert_error(response, 400, "validation_error")
    response = await client.get("/admin/access-log?actor=cli%3Aroot", headers=auth(op))
    assert response.status_code == 200 and response.json() == []
