"""The table counters count what committed: a transaction that rolls back (a failing
request, a timer that will be retried) took no entry, started no match, paid nothing."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from tests.helpers import auth
from tests.integration.tables.helpers import (
    create_table,
    operator,
    player,
    refuse_chance_records,
)

pytestmark = pytest.mark.asyncio

COUNTERS = {
    "entry": ("raiz_entry_cents_total", {}),
    "refund": ("raiz_refund_cents_total", {}),
    "started": ("raiz_tables_started_total", {}),
    "ledger_entry": ("raiz_ledger_transferred_cents_total", {"kind": "entry_fee"}),
}


def _read() -> dict[str, float]:
    return {
        name: REGISTRY.get_sample_value(metric, labels) or 0.0
        for name, (metric, labels) in COUNTERS.items()
    }


def _delta(before: dict[str, float]) -> dict[str, float]:
    return {name: value - before[name] for name, value in _read().items()}


async def test_a_seat_whose_transaction_rolls_back_counts_no_entry_and_no_start(
    client, settings, database_url
):
    op = await operator(client, settings)
    players = [await player(client, settings, f"player{i}", 1_000, op) for i in range(2)]
    table = await create_table(client, players[0][1], seat_count=2)
    # The last seat starts the match; the database then refuses the round's first chance
    # record, so the whole transaction (seat, entry, start) rolls back.
    await refuse_chance_records(database_url)
    before = _read()
    first = await client.post(f"/tables/{table['id']}/seat", headers=auth(players[0][1]))
    assert first.status_code == 201, first.text
    second = await client.post(f"/tables/{table['id']}/seat", headers=auth(players[1][1]))
    assert second.status_code == 500
    # one entry of 500 centavos was taken (the first seat); nothing started
    assert _delta(before) == {"entry": 500, "refund": 0, "started": 0, "ledger_entry": 500}


async def test_committed_entries_and_refunds_are_counted(client, settings):
    op = await operator(client, settings)
    _, token = await player(client, settings, "ana", 1_000, op)
    table = await create_table(client, token, seat_count=2)
    before = _read()
    assert (
        await client.post(f"/tables/{table['id']}/seat", headers=auth(token))
    ).status_code == 201
    assert (
        await client.post(f"/tables/{table['id']}/leave", headers=auth(token))
    ).status_code < 300
    assert _delta(before) == {"entry": 500, "refund": 500, "started": 0, "ledger_entry": 500}
