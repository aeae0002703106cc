"""The checks of a round verification (1 to 4 in :mod:`app.compliance.replay`, signature and
inclusion in :mod:`app.compliance.verify`), each condition broken alone on a recorded bot
match's bundle -- by a forger who re-chains the log and re-signs where the edit would
otherwise break the chain first -- and named on its own check, item and reason."""

from __future__ import annotations

import copy

import pytest

from app.compliance import verify as verifier
from app.compliance.bundle import verify_bundle
from app.compliance.merkle import MerkleTree, leaf_hash
from app.compliance.signing import checkpoint_message
from app.compliance.verify import checkpoint_head
from tests.unit.compliance.support import (
    SIGNER,
    failure,
    log_entry,
    played_round,
    rechain_and_resign,
)

KEYS = {"dev1": SIGNER.public_key}


def _reason(bundle, **kwargs) -> str:
    report = verify_bundle(bundle, public_keys=KEYS, **kwargs)
    assert report.failure is not None
    return report.failure.reason


def _renumber(round_) -> None:
    for seq, item in enumerate(round_["log"], start=1):
        item["seq"] = seq


def _round_two(bundle, previous, **kwargs):
    seats = {seat["engine_seat"]: seat["user_id"] for seat in bundle["seats"]}
    outcome = verifier.verify_round(
        bundle["table"],
        bundle["rounds"][1],
        previous_final_state_hash=previous,
        seats=seats,
        keys=KEYS,
        checkpoints={},
        **kwargs,
    )
    assert outcome.failure is not None
    return outcome.failure.check, outcome.failure.item, outcome.failure.reason


def test_an_unrevealed_seed_or_another_commitment_at_the_rng_service_is_named(bundle):
    hidden = copy.deepcopy(bundle)
    del hidden["rounds"][0]["rng"]["seed"]
    assert failure(hidden) == ("commitment", "seed")
    assert "not revealed" in _reason(hidden)
    bundle["rounds"][0]["rng"]["commitment"] = "00" * 32
    assert failure(bundle) == ("commitment", "commitment")


def test_a_last_hash_other_than_the_chains_is_named_by_the_chain(bundle):
    round_ = bundle["rounds"][0]
    round_["result"]["last_hash"] = "00" * 32
    assert failure(bundle) == ("chain", f"entry {len(round_['log'])}")


def test_an_unknown_game_is_a_format_failure(bundle):
    bundle["table"]["game"] = "poker"
    assert failure(bundle) == ("format", "table")


def test_round_one_must_start_as_a_new_match_of_the_tables_options(bundle):
    bundle["table"]["options"] = {**bundle["table"]["options"], "lives": 5}
    assert failure(bundle) == ("continuity", "start state")
    assert "new match" in _reason(bundle)


def test_a_later_round_must_continue_the_previous_rounds_end(bundle):
    ended = bundle["rounds"][0]["result"]["final_state_hash"]
    assert bundle["rounds"][1]["start_state_hash"] == ended
    assert _round_two(bundle, None) == (
        "continuity",
        "start state",
        "round 1 is not available",
    )
    assert _round_two(bundle, "00" * 32)[:2] == ("continuity", "start state")


def test_a_chance_entry_must_be_the_draw_the_engine_asks_for(bundle):
    round_ = bundle["rounds"][1]
    deal = log_entry(round_, lambda e: e["kind"] == "chance")
    deal["body"]["label"] = "reshuffle/1"
    rechain_and_resign(bundle, round_)
    assert failure(bundle) == ("replay", f"entry {deal['seq']}")
    assert "asked for the deal draw" in _reason(bundle)


def test_a_chance_entry_where_the_engine_wants_none_is_named(bundle):
    round_ = bundle["rounds"][1]
    deal = log_entry(round_, lambda e: e["kind"] == "chance")
    round_["log"].insert(deal["seq"] + 1, copy.deepcopy(deal))  # after the deal's event
    _renumber(round_)
    rechain_and_resign(bundle, round_)
    assert failure(bundle) == ("replay", f"entry {deal['seq'] + 2}")
    assert "wants none" in _reason(bundle)


def test_a_test_only_fixed_deck_is_refused_unless_fixed_streams_are_allowed(bundle):
    round_ = bundle["rounds"][1]
    deal = log_entry(round_, lambda e: e["kind"] == "chance")
    round_["rng"]["streams"] = [{"label": "deal", "fixed": True}]
    assert failure(bundle) == ("chance", f"entry {deal['seq']}")
    assert "fixed deck" in _reason(bundle)
    # allowed (a test table's rounds), the logged deck stands; the signed record, which says
    # the stream was drawn from the seed, then tells
    assert failure(bundle, public_keys=KEYS, allow_fixed_streams=True) == (
        "signature",
        "record",
    )


def test_an_input_without_a_source_or_a_player_input_without_a_user_is_named(bundle):
    sourceless = copy.deepcopy(bundle)
    round_ = played_round(sourceless)
    move = log_entry(round_, lambda e: e["kind"] == "input" and "user" in e["body"]["source"])
    del move["body"]["source"]
    rechain_and_resign(sourceless, round_)
    assert failure(sourceless) == ("replay", f"entry {move['seq']}")
    assert "has no source" in _reason(sourceless)
    round_ = played_round(bundle)
    move = log_entry(round_, lambda e: e["kind"] == "input" and "user" in e["body"]["source"])
    move["body"]["source"] = {"action_id": "a1"}
    rechain_and_resign(bundle, round_)
    assert failure(bundle) == ("replay", f"entry {move['seq']}")
    assert "has no user" in _reason(bundle)


def test_abandon_win_only_from_the_abandon_timer(bundle):
    round_ = played_round(bundle)
    timeout = log_entry(round_, lambda e: e["kind"] == "input" and e["body"]["type"] == "timeout")
    assert timeout["body"]["source"].get("timer") != "abandon"
    timeout["body"] = {
        "type": "abandon_win",
        "seat": timeout["body"].get("seat", 0),
        "source": timeout["body"]["source"],
    }
    rechain_and_resign(bundle, round_)
    assert failure(bundle) == ("replay", f"entry {timeout['seq']}")
    assert "abandon timer" in _reason(bundle)


def test_a_client_seed_noted_in_the_log_but_not_mixed_is_named(bundle):
    round_ = bundle["rounds"][0]
    assert round_["rng"]["client_seeds"] == []
    round_["log"].insert(
        0, {"seq": 0, "kind": "note", "body": {"type": "client_seed", "client_seed": "ab"}}
    )
    _renumber(round_)
    rechain_and_resign(bundle, round_)
    assert failure(bundle) == ("chance", "client seeds")


@pytest.mark.parametrize("where", ["before an input", "at the end"])
def test_an_event_the_engine_produced_missing_from_the_log_is_named(bundle, where):
    round_ = bundle["rounds"][1]
    log = round_["log"]
    if where == "at the end":
        index = len(log) - 1
        expected = "end of log"
    else:
        index = next(
            i for i, e in enumerate(log) if e["kind"] == "event" and log[i + 1]["kind"] == "input"
        )
        expected = f"entry {log[index + 1]['seq'] - 1}"
    assert log[index]["kind"] == "event"
    del log[index]
    _renumber(round_)
    rechain_and_resign(bundle, round_)
    assert failure(bundle) == ("replay", expected)
    assert "missing" in _reason(bundle)


def test_a_summary_other_than_the_rounds_end_event_is_named(bundle):
    round_ = bundle["rounds"][1]
    round_["result"]["summary"] = {**round_["result"]["summary"], "winner": 3}
    rechain_and_resign(bundle, round_)
    assert failure(bundle) == ("final_state", "summary")


def _checkpointed(bundle) -> dict:
    """Every round of ``bundle`` under one signed checkpoint, each with its audit path."""
    digests = [bytes.fromhex(r["signature"]["record_hash"]) for r in bundle["rounds"]]
    tree = MerkleTree([leaf_hash(digest) for digest in digests])
    checkpoint = {
        "id": 7,
        "tree_size": tree.size,
        "root": tree.root().hex(),
        "created_at": "2026-01-02T00:00:00+00:00",
        "key_id": SIGNER.key_id,
    }
    checkpoint["signature"] = SIGNER.sign(checkpoint_message(checkpoint_head(checkpoint))).hex()
    bundle["checkpoints"] = [checkpoint]
    for index, round_ in enumerate(bundle["rounds"]):
        round_["inclusion"] = {
            "checkpoint_id": 7,
            "leaf_index": index,
            "audit_path": [node.hex() for node in tree.proof(index)],
        }
    assert verify_bundle(bundle, public_keys=KEYS).ok
    return checkpoint


def test_an_inclusion_proof_is_checked_against_a_signed_checkpoint(bundle):
    checkpoint = _checkpointed(bundle)
    bent = copy.deepcopy(bundle)
    bent["rounds"][1]["inclusion"]["leaf_index"] = 0
    assert failure(bent, public_keys=KEYS) == ("inclusion", "leaf 0")
    missing = copy.deepcopy(bundle)
    missing["checkpoints"] = []
    assert failure(missing, public_keys=KEYS) == ("inclusion", "checkpoint")
    unknown = copy.deepcopy(bundle)
    unknown["checkpoints"][0]["key_id"] = "elsewhere"
    assert failure(unknown, public_keys=KEYS) == ("inclusion", "checkpoint 7")
    assert "unknown key" in _reason(unknown)
    forged = copy.deepcopy(bundle)
    forged["checkpoints"][0]["root"] = "00" * 32  # the signature no longer covers it
    assert failure(forged, public_keys=KEYS) == ("inclusion", "checkpoint 7")
    assert "does not verify" in _reason(forged)
    assert checkpoint["tree_size"] == len(bundle["rounds"])


def test_an_unsigned_round_or_one_signed_with_an_unknown_key_is_named(bundle):
    unsigned = copy.deepcopy(bundle)
    unsigned["rounds"][0]["signature"] = None
    assert failure(unsigned, public_keys=KEYS) == ("signature", "signature")
    assert "not signed" in _reason(unsigned)
    assert failure(bundle, public_keys={"other": SIGNER.public_key}) == ("signature", "key")


def test_a_round_that_has_not_finished_is_a_format_failure(bundle):
    seats = {seat["engine_seat"]: seat["user_id"] for seat in bundle["seats"]}
    round_ = bundle["rounds"][0]
    round_["result"] = None
    outcome = verifier.verify_round(
        bundle["table"],
        round_,
        previous_final_state_hash=None,
        seats=seats,
        keys=KEYS,
        checkpoints={},
    )
    assert outcome.failure is not None
    assert (outcome.failure.check, outcome.failure.item) == ("format", "result")
