"""The public record of rounds: one round read alone, many read at once, and in what order."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

from rng.service import RngService
from tests.integration.rng.conftest import SEALER, new_table

pytestmark = pytest.mark.asyncio


async def test_many_rounds_read_at_once_are_each_round_read_alone(rng_transaction, raw):
    # The audit's bulk read must show exactly what the one-round read shows: no seed before the
    # reveal, client seeds in mixing order (by contributor, not by arrival), each round's
    # draws only, and unknown ids left out.
    table = new_table()
    async with rng_transaction() as service:
        hidden = (await service.commit_round(table, 1)).id
        revealed = (await service.commit_round(table, 2)).id
        empty = (await service.commit_round(table, 3)).id
    for contributor in ("seat-2", "seat-0", "seat-1"):  # arrival order is not mixing order
        async with rng_transaction() as service:
            await service.add_client_seed(hidden, contributor, contributor.encode())
            await service.add_client_seed(revealed, contributor, contributor.encode() * 2)
    async with rng_transaction() as service:
        await service.stream(hidden, "deal")
        await service.stream(revealed, "reshuffle/1")
        await service.stream(revealed, "deal")
        seed = await service.reveal(revealed)
    async with rng_transaction() as service:
        alone = {
            round_id: await service.public_round(round_id) for round_id in (hidden, revealed, empty)
        }
        at_once = await service.public_rounds([hidden, uuid.uuid4(), revealed, empty])
        assert await service.public_rounds([]) == {}
    assert at_once == alone
    assert at_once[hidden].seed is None and at_once[hidden].revealed_at is None
    assert at_once[revealed].seed == seed.hex()
    assert at_once[hidden].contributors == ("seat-0", "seat-1", "seat-2")
    assert [stream.label for stream in at_once[revealed].streams] == ["reshuffle/1", "deal"]
    assert at_once[empty].streams == () and at_once[empty].client_seeds == ()
    # The arrival position is recorded as it was, even though mixing sorts by contributor.
    rows = await raw.fetch(
        "SELECT contributor, position FROM rng.client_seeds WHERE round_id = $1", hidden
    )
    assert {row["contributor"]: row["position"] for row in rows} == {
        "seat-2": 0,
        "seat-0": 1,
        "seat-1": 2,
    }


async def test_the_record_lists_draws_in_the_order_drawn_whatever_plan_the_database_picks(
    rng_transaction, database
):
    # Draws stored in the order they happened come back in that order from a table scan; an
    # index scan of the primary key (round, label) would give them by label. The record's own
    # ORDER BY is what keeps "in the order they were first drawn" true.
    async with rng_transaction() as service:
        round_id = (await service.commit_round(new_table(), 1)).id
        await service.stream(round_id, "reshuffle/1")
        await service.stream(round_id, "deal")
    async with database.session() as session:
        await session.execute(text("SET LOCAL enable_seqscan = off"))
        await session.execute(text("SET LOCAL enable_bitmapscan = off"))
        service = RngService(session, SEALER, allow_fixed=False)
        alone = await service.public_round(round_id)
        at_once = (await service.public_rounds([round_id]))[round_id]
    assert [stream.label for stream in alone.streams] == ["reshuffle/1", "deal"]
    assert [stream.label for stream in at_once.streams] == ["reshuffle/1", "deal"]


async def test_a_contributor_adds_a_client_seed_to_each_round_and_the_cap_is_per_round(
    rng_transaction,
):
    # A player sits through many rounds: a seed given to one round neither blocks their seed
    # for the next nor counts towards its cap.
    table = new_table()
    async with rng_transaction() as service:
        full = (await service.commit_round(table, 1)).id
        following = (await service.commit_round(table, 2)).id
        for number in range(16):
            await service.add_client_seed(full, f"player-{number:02d}", bytes([number + 1]))
    async with rng_transaction() as service:
        await service.add_client_seed(following, "player-00", b"next round")
        await service.add_client_seed(following, "player-16", b"newcomer")
        public = await service.public_round(following)
    assert public.contributors == ("player-00", "player-16")
