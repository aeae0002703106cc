"""The settlement arithmetic of a table, pure and exact.

``fee = floor(pool * fee_bps / 10 000)``; the net ``pool - fee`` is split among the
winners by floor division, and the remainder (fewer centavos than there are winners)
goes one centavo each to the first winners in the order given.  The fee plus the
payouts always equal the pool, so the escrow ends at exactly zero.
"""

from __future__ import annotations

from ledger.constants import FEE_BPS_DENOMINATOR

__all__ = ("split_settlement",)


def split_settlement(pool_cents: int, fee_bps: int, winner_count: int) -> tuple[int, list[int]]:
    """``(fee_cents, payouts)`` for a pool split among ``winner_count`` winners.

    >>> split_settlement(2000, 1000, 1)
    (200, [1800])
    >>> split_settlement(1001, 1000, 3)
    (100, [301, 300, 300])
    """
    if pool_cents < 0:
        raise ValueError("pool_cents must not be negative")
    if not 0 <= fee_bps <= FEE_BPS_DENOMINATOR:
        raise ValueError("fee_bps must be within 0..10000")
    if winner_count < 1:
        raise ValueError("there must be at least one winner")
    fee_cents = pool_cents * fee_bps // FEE_BPS_DENOMINATOR
    net_cents = pool_cents - fee_cents
    share, remainder = divmod(net_cents, winner_count)
    payouts = [share + 1 if position < remainder else share for position in range(winner_count)]
    assert fee_cents + sum(payouts) == pool_cents
    return fee_cents, payouts
