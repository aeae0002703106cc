"""Settlement arithmetic: the fee is a floor, the split is exact, the remainder order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.constants import MAX_TRANSFER_CENTS, MAX_WINNERS
from ledger.settlement import split_settlement


def test_the_readme_example_four_entries_of_five_reais_at_ten_percent():
    fee, payouts = split_settlement(4 * 500, 1_000, 1)
    assert fee == 200  # R$2.00
    assert payouts == [1_800]  # R$18.00


def test_co_winners_share_by_floor_and_the_first_get_the_remainder():
    # 4 x R$2.51 = R$10.04 at 10%: fee floor(100.4) = 100, net 904 among 3 = 301 r 1
    assert split_settlement(1_004, 1_000, 3) == (100, [302, 301, 301])
    assert split_settlement(1_000, 0, 3) == (0, [334, 333, 333])
    assert split_settlement(5, 0, 7) == (0, [1, 1, 1, 1, 1, 0, 0])


def test_edges_zero_pool_zero_fee_and_whole_pool_as_fee():
    assert split_settlement(0, 1_000, 2) == (0, [0, 0])
    assert split_settlement(999, 0, 1) == (0, [999])
    assert split_settlement(999, 10_000, 2) == (999, [0, 0])
    assert split_settlement(9, 1_000, 1) == (0, [9])  # floor(0.9) = 0


@pytest.mark.parametrize(
    ("pool", "fee_bps", "winners"), [(-1, 0, 1), (10, -1, 1), (10, 10_001, 1), (10, 100, 0)]
)
def test_out_of_domain_arguments_are_refused(pool, fee_bps, winners):
    with pytest.raises(ValueError):
        split_settlement(pool, fee_bps, winners)


@given(
    pool=st.integers(min_value=0, max_value=MAX_TRANSFER_CENTS * 1_000),
    fee_bps=st.integers(min_value=0, max_value=10_000),
    winners=st.integers(min_value=1, max_value=MAX_WINNERS),
)
def test_split_is_exact_fee_is_floor_and_remainder_goes_first(pool, fee_bps, winners):
    fee, payouts = split_settlement(pool, fee_bps, winners)
    assert fee + sum(payouts) == pool
    # fee = floor(pool * bps / 10000), checked without division: fee <= exact < fee + 1
    assert fee * 10_000 <= pool * fee_bps < (fee + 1) * 10_000
    assert len(payouts) == winners
    assert max(payouts) - min(payouts) <= 1
    assert payouts == sorted(payouts, reverse=True)
    assert payouts.count(min(payouts) + 1) == (pool - fee) % winners
