"""Check ``money``: the match's result against the ledger (pure).

For the round that ended the match of a finished table: every seat that played paid exactly
the table's entry from its own wallet into the table's escrow (and got no refund); the
settlement ``settle:{table}`` is at the table's fee snapshot, pays the winner that the
``match_ended`` event names, and its pool, fee and payout follow the published formula
(``fee = floor(pool * fee_bps / 10 000)``); the fee and payout transfers carry exactly those
amounts between the right accounts; nothing else moved through the escrow, which is closed
at zero; and the result the table displays agrees with all of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.compliance.failures import VerificationFailed
from app.compliance.record import account_id, split_pool

__all__ = ("check_money",)


def _fail(item: str, reason: str) -> VerificationFailed:
    return VerificationFailed("money", item, reason)


def _expect_transfer(
    transfers: Mapping[str, Mapping[str, Any]],
    transfer_id: str,
    *,
    kind: str,
    amount: int,
    debit: str,
    credit: str | None,
    what: str,
) -> None:
    transfer = transfers.get(transfer_id)
    item = f"transfer {transfer_id}"
    if transfer is None:
        raise _fail(item, f"{what} is missing from the ledger")
    if transfer["kind"] != kind:
        raise _fail(item, f"{what} is a {transfer['kind']}, not a {kind}")
    if transfer["amount_cents"] != amount:
        raise _fail(item, f"{what} moves {transfer['amount_cents']} centavos, not {amount}")
    if transfer["debit_account_id"] != debit:
        raise _fail(item, f"{what} is debited from {transfer['debit_account_id']}, not {debit}")
    if credit is not None and transfer["credit_account_id"] != credit:
        raise _fail(item, f"{what} is credited to {transfer['credit_account_id']}, not {credit}")


def check_money(
    table: Mapping[str, Any],
    seats: Sequence[Mapping[str, Any]],
    money: Mapping[str, Any] | None,
    match_ended: Mapping[str, Any],
    seat_count: int,
) -> None:
    """Raise :class:`VerificationFailed` (check ``money``) at the first disagreement."""
    if money is None:
        raise _fail("ledger", "the table is finished but no ledger records are available")
    currency = table["currency"]
    table_id = str(table["id"])
    escrow = account_id("table_escrow", currency, table_id)
    transfers = {transfer["id"]: transfer for transfer in money["transfers"]}
    by_seat = {seat["engine_seat"]: seat for seat in seats}
    entry_cents = table["entry_cents"]

    pool = 0
    expected_ids: set[str] = set()
    for seat in range(seat_count):
        player = by_seat.get(seat)
        if player is None:
            raise _fail(f"seat {seat}", "no player is recorded in this seat")
        if entry_cents == 0:
            continue
        entry_id = player.get("entry_transfer_id")
        if not entry_id:
            raise _fail(f"seat {seat}", "the seat has no entry transfer")
        _expect_transfer(
            transfers,
            entry_id,
            kind="entry_fee",
            amount=entry_cents,
            debit=account_id("player_wallet", currency, player["user_id"]),
            credit=escrow,
            what=f"seat {seat}'s entry",
        )
        refunds = [t["id"] for t in transfers.values() if t.get("reverses_id") == entry_id]
        if refunds:
            raise _fail(f"transfer {refunds[0]}", f"seat {seat} played but was refunded")
        pool += entry_cents
        expected_ids.add(entry_id)

    winner_seat = match_ended["winner"]
    winner = by_seat[winner_seat]["user_id"] if winner_seat in by_seat else None
    settlement = money.get("settlement")
    settlement_id = f"settle:{table_id}"
    if settlement is None or settlement["id"] != settlement_id:
        raise _fail(f"settlement {settlement_id}", "the match ended but the table was not settled")
    if settlement["fee_bps"] != table["fee_bps"]:
        raise _fail(
            f"settlement {settlement_id}",
            f"fee at {settlement['fee_bps']} bps, the table's snapshot is {table['fee_bps']} bps",
        )
    if settlement["pool_cents"] != pool:
        raise _fail(
            f"settlement {settlement_id}",
            f"pool of {settlement['pool_cents']} centavos, the entries add up to {pool}",
        )
    if settlement["winners"] != [winner]:
        raise _fail(
            f"settlement {settlement_id}",
            f"pays {settlement['winners']}, the match's winner is seat {winner_seat} ({winner})",
        )
    fee, payouts = split_pool(pool, table["fee_bps"], 1)
    if settlement["fee_cents"] != fee or settlement["payouts_cents"] != payouts:
        raise _fail(
            f"settlement {settlement_id}",
            f"fee {settlement['fee_cents']} and payouts {settlement['payouts_cents']}, the pool "
            f"of {pool} at {table['fee_bps']} bps gives fee {fee} and payouts {payouts}",
        )
    if fee > 0:
        fee_id = f"{settlement_id}/fee"
        _expect_transfer(
            transfers,
            fee_id,
            kind="house_fee",
            amount=fee,
            debit=escrow,
            credit=None,
            what="the fee",
        )
        expected_ids.add(fee_id)
    if payouts[0] > 0:
        payout_id = f"{settlement_id}/payout/0"
        _expect_transfer(
            transfers,
            payout_id,
            kind="payout",
            amount=payouts[0],
            debit=escrow,
            credit=account_id("player_wallet", currency, winner),
            what="the winner's payout",
        )
        expected_ids.add(payout_id)

    refunded = {t["reverses_id"] for t in transfers.values() if t["kind"] == "entry_refund"}
    balance = 0
    for transfer in money["transfers"]:
        leaver = transfer["kind"] == "entry_fee" and transfer["id"] in refunded
        refund = transfer["kind"] == "entry_refund" and transfer.get("reverses_id") in transfers
        if transfer["id"] not in expected_ids and not leaver and not refund:
            raise _fail(
                f"transfer {transfer['id']}",
                f"an unexpected {transfer['kind']} moved through the table's escrow",
            )
        if transfer["credit_account_id"] == escrow:
            balance += transfer["amount_cents"]
        if transfer["debit_account_id"] == escrow:
            balance -= transfer["amount_cents"]
    account = money["escrow"]
    if balance != 0 or account["balance_cents"] != 0 or not account["closed"]:
        raise _fail(
            f"escrow {escrow}",
            f"the escrow should be closed at 0; its transfers add up to {balance}, its balance "
            f"is {account['balance_cents']}, closed: {account['closed']}",
        )

    shown = table.get("result") or {}
    shown_payouts = [(p["user_id"], p["amount_cents"]) for p in shown.get("payouts", [])]
    if shown.get("winner_user_id") != winner or shown_payouts != [(winner, payouts[0])]:
        raise _fail(
            "table result",
            f"the table shows winner {shown.get('winner_user_id')} paid {shown_payouts}, the "
            f"ledger paid {winner} {payouts[0]}",
        )
    if shown.get("pool_cents") != pool or shown.get("fee_cents") != fee:
        raise _fail(
            "table result",
            f"the table shows a pool of {shown.get('pool_cents')} and a fee of "
            f"{shown.get('fee_cents')} centavos, the ledger's are {pool} and {fee}",
        )
