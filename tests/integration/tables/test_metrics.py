"""The table counters count what committed: a transaction that rolls back (a failing
request, a timer that will be retried) took no entry, started no match, paid nothing."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from tests.helpers import auth
from tests.integration.tables.helpers import (
    FAST_TIMERS,
    create_table,
    operator,
    play_to_the_end,
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
FINISH_COUNTERS = {
    "finished": ("raiz_tables_finished_total", {}),
    "payout": ("raiz_payout_cents_total", {}),
    "fee": ("raiz_fee_cents_total", {}),
}


def _read(counters: dict[str, tuple[str, dict[str, str]]] = COUNTERS) -> dict[str, float]:
    return {
        name: REGISTRY.get_sample_value(metric, labels) or 0.0
        for name, (metric, labels) in counters.items()
    }


def _delta(
    before: dict[str, float], counters: dict[str, tuple[str, dict[str, str]]] = COUNTERS
) -> dict[str, float]:
    return {name: value - before[name] for name, value in _read(counters).items()}


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


async def test_a_finished_match_counts_its_payout_and_its_fee_once(client, settings):
    op = await operator(client, settings)
    players = [await player(client, settings, f"player{i}", 1_000, op) for i in range(3)]
    table = await create_table(
        client, players[0][1], seat_count=3, options={"lives": 1, **FAST_TIMERS}
    )
    before = _read(FINISH_COUNTERS)
    for _, token in players:
        response = await client.post(f"/tables/{table['id']}/seat", headers=auth(token))
        assert response.status_code == 201, response.text
    final = await play_to_the_end(client, table["id"], [token for _, token in players])
    # 3 entries of 500 make a pool of 1,500; the default fee of 10 % keeps 150
    assert final["result"]["pool_cents"] == 1_500
    assert _delta(before, FINISH_COUNTERS) == {"finished": 1, "payout": 1_350, "fee": 150}
