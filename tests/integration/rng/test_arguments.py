"""The edges of the RNG service's arguments, against the real columns that hold them."""

from __future__ import annotations

import pytest

from rng.contract import MAX_ROUND_NUMBER, RngErrorCode, RngServiceError
from tests.integration.rng.conftest import new_table

pytestmark = pytest.mark.asyncio


async def test_round_numbers_from_0_to_the_largest_integer_are_accepted(rng_transaction, raw):
    table = new_table()
    async with rng_transaction(allow_fixed=True) as service:
        for number in (0, MAX_ROUND_NUMBER):
            await service.fix_stream(table, number, "deal", permutation=[1, 0])
            await service.commit_round(table, number)
    stored = await raw.fetch("SELECT round_number FROM rng.rounds WHERE table_ref = $1", table)
    assert sorted(row["round_number"] for row in stored) == [0, MAX_ROUND_NUMBER]
    fixed = await raw.fetch(
        "SELECT round_number FROM rng.fixed_streams WHERE table_ref = $1", table
    )
    assert sorted(row["round_number"] for row in fixed) == [0, MAX_ROUND_NUMBER]


@pytest.mark.parametrize("round_number", [-1, MAX_ROUND_NUMBER + 1, True, 1.0, "1", None])
async def test_a_fixed_stream_for_a_round_number_out_of_range_is_refused(
    rng_transaction, raw, round_number
):
    async with rng_transaction(allow_fixed=True) as service:
        with pytest.raises(RngServiceError) as caught:
            await service.fix_stream(new_table(), round_number, "deal", permutation=[1, 0])
    assert caught.value.code is RngErrorCode.INVALID_ARGUMENT
    assert caught.value.details == {"field": "round_number"}
    assert await raw.fetchval("SELECT count(*) FROM rng.fixed_streams") == 0
