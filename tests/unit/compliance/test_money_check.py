"""Check 5 of a round verification, lives and payouts against the ledger
(:mod:`app.compliance.money`), on a recorded bot match's bundle: the money section is not
covered by any round's signature, so each edit of it must be caught by the money check
itself, on the item it names."""

from __future__ import annotations

import pytest

from tests.unit.compliance.support import SIGNER, failure


def test_a_settlement_to_the_wrong_player_is_named(bundle):
    loser = next(
        s["user_id"]
        for s in bundle["seats"]
        if s["user_id"] != bundle["money"]["settlement"]["winners"][0]
    )
    bundle["money"]["settlement"]["winners"] = [loser]
    assert failure(bundle) == ("money", f"settlement settle:{bundle['table']['id']}")


def _transfer(money, suffix: str) -> dict:
    return next(t for t in money["transfers"] if t["id"].endswith(suffix))


def _through_escrow(money, transfer_id, kind, cents, debit, credit, reverses=None) -> dict:
    transfer = {
        **money["transfers"][0],
        "id": transfer_id,
        "kind": kind,
        "amount_cents": cents,
        "debit_account_id": debit,
        "credit_account_id": credit,
        "reverses_id": reverses,
    }
    money["transfers"].append(transfer)
    return transfer


def _edit_money(bundle, edit: str) -> str:
    """Change one thing of the bundle's money (which no round signature covers); returns the
    item the verifier must name."""
    money = bundle["money"]
    escrow = money["escrow"]["account_id"]
    settlement = money["settlement"]
    entry, payout = _transfer(money, ":1"), _transfer(money, "/payout/0")
    stranger = _transfer(money, ":2")["debit_account_id"]  # another player's wallet
    if edit == "entry kind":
        entry["kind"] = "adjustment"
    elif edit == "entry debited from another wallet":
        entry["debit_account_id"] = stranger
    elif edit == "payout credited to another wallet":
        payout["credit_account_id"] = stranger
    elif edit == "a player refunded":
        refund = _through_escrow(
            money, "refund:x", "entry_refund", 500, escrow, entry["debit_account_id"], entry["id"]
        )
        return f"transfer {refund['id']}"
    elif edit == "settlement fee rate":
        settlement["fee_bps"] += 100
        return f"settlement {settlement['id']}"
    elif edit == "settlement pool":
        settlement["pool_cents"] += 100
        return f"settlement {settlement['id']}"
    elif edit == "settlement split":
        settlement["fee_cents"] += 1
        settlement["payouts_cents"][0] -= 1
        return f"settlement {settlement['id']}"
    elif edit == "money in and out of the escrow":
        # netting to zero, so only the list of expected transfers can tell
        _through_escrow(money, "sneak:in", "adjustment", 100, stranger, escrow)
        _through_escrow(money, "sneak:out", "payout", 100, escrow, entry["debit_account_id"])
        return "transfer sneak:in"
    elif edit == "a leaver refunded short":
        # a player who left is refunded: allowed, but 100 centavos stay in the escrow
        _through_escrow(money, "entry:left", "entry_fee", 500, stranger, escrow)
        _through_escrow(money, "refund:left", "entry_refund", 400, escrow, stranger, "entry:left")
        return f"escrow {escrow}"
    elif edit == "escrow left open":
        money["escrow"]["closed"] = False
        return f"escrow {escrow}"
    elif edit == "table shows another winner":
        bundle["table"]["result"]["winner_user_id"] = bundle["seats"][1]["user_id"]
        return "table result"
    elif edit == "table shows another payout":
        bundle["table"]["result"]["payouts"][0]["amount_cents"] += 1
        return "table result"
    else:
        raise AssertionError(edit)
    return f"transfer {entry['id'] if 'entry' in edit else payout['id']}"


@pytest.mark.parametrize(
    "edit",
    [
        "entry kind",
        "entry debited from another wallet",
        "payout credited to another wallet",
        "a player refunded",
        "settlement fee rate",
        "settlement pool",
        "settlement split",
        "money in and out of the escrow",
        "a leaver refunded short",
        "escrow left open",
        "table shows another winner",
        "table shows another payout",
    ],
)
def test_each_money_edit_alone_is_named_by_its_own_check(bundle, edit):
    """Check 5 (lives and payouts match the ledger): every condition of the money check, broken
    alone, fails the bundle on the item that condition names."""
    item = _edit_money(bundle, edit)
    assert failure(bundle, public_keys={"dev1": SIGNER.public_key}) == ("money", item)


@pytest.mark.parametrize("field", ["pool_cents", "fee_cents"])
def test_a_displayed_pool_or_fee_the_ledger_did_not_take_is_named(bundle, field):
    bundle["table"]["result"][field] += 1
    assert failure(bundle) == ("money", "table result")
