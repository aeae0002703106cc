"""The pure verifier on bundles of bot matches recorded like the driver records them:
each kind of tampering is caught by the right check, even when the forger re-chains the log
and re-signs with a key of their own."""

from __future__ import annotations

import base64
import contextlib
import copy
import io
import json
import subprocess
import sys
import uuid
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from app.compliance import verify as verifier
from app.compliance.bundle import verify_bundle
from app.compliance.encoding import canonical, chain_hash, event_bytes, event_dict, state_hash
from app.compliance.record import record_hash
from app.compliance.replay import Diverged, Replay
from app.compliance.signing import Signer
from app.compliance.verify import signed_record
from app.compliance.verify_bundle import main as offline_main
from app.games import replay, resolve_options, restore
from app.games.events import (
    EVENT_TYPES,
    Dealt,
    MatchEnded,
    Reshuffled,
    RoundEnded,
    canonical_bytes,
    event_from_dict,
)
from app.tables.roundlog import entry_hash
from tests.unit.compliance.support import (
    SIGNER,
    failure,
    log_entry,
    played_round,
    rechain_and_resign,
    sign,
)

ROOT = Path(__file__).resolve().parents[3]
FORGER = Signer.from_keyring("dev1:" + base64.b64encode(b"f" * 32).decode())


def test_a_recorded_match_verifies(bundle):
    report = verify_bundle(bundle, public_keys={"dev1": SIGNER.public_key})
    assert report.ok, report.failure
    assert [outcome.number for outcome in report.rounds] == list(
        range(1, len(bundle["rounds"]) + 1)
    )


def test_the_fast_paths_equal_the_reference_functions(bundle):
    for round_ in bundle["rounds"]:
        previous = b"\x00" * 32
        for entry in round_["log"]:
            assert chain_hash(previous, 7, entry["kind"], entry["body"]) == entry_hash(
                previous, 7, entry["kind"], entry["body"]
            )
            if entry["kind"] == "event":
                event = event_from_dict(entry["body"])
                assert event_dict(event) == event.to_dict() == entry["body"]
            if entry["kind"] == "event":
                assert event_bytes(event) == canonical_bytes(entry["body"])
        assert canonical(round_["start_state"]) == canonical_bytes(round_["start_state"])
        match = restore(round_["start_state"])
        assert state_hash(match) == match.state_hash() == round_["start_state_hash"]


def test_event_bytes_are_the_canonical_bytes_of_every_kind_of_event():
    from tests.unit.games.golden import load

    seen = set()
    for recorded in load()["matches"]:
        options = resolve_options("cacheta-raiz", recorded["options"])
        match = replay(options, recorded["seats"], recorded["inputs"])
        for event in match.events:
            assert event_bytes(event) == canonical_bytes(event.to_dict()), event
            seen.add(type(event))
    # no recorded match runs out of stock
    reshuffled = Reshuffled(seq=90, round=3, number=1, stock=(7, 1, 50), kept=12)
    assert event_bytes(reshuffled) == canonical_bytes(reshuffled.to_dict())
    assert seen | {Reshuffled} == set(EVENT_TYPES.values())
    # Dealt, RoundEnded and MatchEnded have fields sorting after "type" (the dict route)
    assert {Dealt, RoundEnded, MatchEnded} <= seen


def _reference_outcome(bundle, round_, previous):
    """verify_round with the single-pass chain and replay turned off (the reference checks)."""
    original = Replay.run

    def reference_only(self, *, chained):
        if chained:
            raise Diverged
        return original(self, chained=False)

    Replay.run = reference_only
    try:
        return _outcome(bundle, round_, previous)
    finally:
        Replay.run = original


def _outcome(bundle, round_, previous):
    seats = {seat["engine_seat"]: seat["user_id"] for seat in bundle["seats"]}
    return verifier.verify_round(
        bundle["table"],
        round_,
        previous_final_state_hash=previous,
        seats=seats,
        keys={"dev1": SIGNER.public_key},
        checkpoints={},
    )


_EDITS = ("body", "seq", "hash", "kind", "swap", "delete", "duplicate")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    edit=st.sampled_from(_EDITS),
    rechain=st.booleans(),
)
def test_the_single_pass_names_exactly_what_the_reference_checks_name(
    pristine, data, edit, rechain
):
    """verify_round first re-hashes the chain during the replay (comparing event bytes); on any
    doubt it runs the reference checks. Whatever the edit, the verdict is the reference's."""
    bundle = copy.deepcopy(pristine)
    number = data.draw(st.integers(0, len(bundle["rounds"]) - 1), label="round")
    round_ = bundle["rounds"][number]
    log = round_["log"]
    index = data.draw(st.integers(0, len(log) - 2), label="entry")
    entry = log[index]
    if edit == "body":
        keys = sorted(entry["body"])
        key = data.draw(st.sampled_from(keys), label="field")
        value = data.draw(
            st.one_of(
                st.integers(-2, 200),
                st.booleans(),
                st.none(),
                st.just(float(entry["body"][key]) if type(entry["body"][key]) is int else 0.5),
                st.just([]),
                st.text(max_size=3),
            ),
            label="value",
        )
        assume(json.dumps(value) != json.dumps(entry["body"][key]))
        entry["body"][key] = value
    elif edit == "seq":
        entry["seq"] = data.draw(
            st.sampled_from([True, float(entry["seq"]), str(entry["seq"]), entry["seq"] + 1])
        )
    elif edit == "hash":
        entry["hash"] = ("0" if entry["hash"][0] != "0" else "1") + entry["hash"][1:]
    elif edit == "kind":
        kinds = [k for k in ("event", "input", "chance", "note", "x") if k != entry["kind"]]
        entry["kind"] = data.draw(st.sampled_from(kinds))
    elif edit == "swap":
        log[index], log[index + 1] = log[index + 1], log[index]
        log[index]["seq"], log[index + 1]["seq"] = index + 1, index + 2
    elif edit == "delete":
        del log[index]
        for position, later in enumerate(log, start=1):
            later["seq"] = position
    else:
        log.insert(index, copy.deepcopy(entry))
        for position, later in enumerate(log, start=1):
            later["seq"] = position
    if rechain:
        with contextlib.suppress(TypeError, ValueError):  # not encodable: the plain edit
            rechain_and_resign(bundle, round_)
    previous = None if number == 0 else bundle["rounds"][number - 1]["result"]["final_state_hash"]
    fast = _outcome(bundle, round_, previous)
    reference = _reference_outcome(bundle, round_, previous)
    assert fast.failure == reference.failure
    assert fast.ok == reference.ok
    if not rechain:
        assert not fast.ok  # (a forger who re-chains and re-signs may make an edit harmless)


def test_a_boolean_or_float_seq_is_a_broken_chain(bundle):
    """The single pass writes seq as digits: true and 1.0 compare equal to 1 in Python but
    hash differently, so they must not slip through."""
    for forged in (True, 1.0):
        tampered = copy.deepcopy(bundle)
        tampered["rounds"][0]["log"][0]["seq"] = forged
        assert failure(tampered) == ("chain", f"entry {forged}")


def test_stored_data_tampering_is_named(bundle):
    played = played_round(bundle)
    discard = log_entry(played, lambda e: e["body"].get("type") == "discarded")
    cases = []
    flipped = copy.deepcopy(bundle)
    log_entry(played_round(flipped), lambda e: e["seq"] == discard["seq"])["body"]["card"] ^= 1
    cases.append((flipped, ("chain", f"entry {discard['seq']}")))
    deleted = copy.deepcopy(bundle)
    played_round(deleted)["log"].pop(discard["seq"] - 1)
    cases.append((deleted, ("chain", f"entry {discard['seq']}")))
    reordered = copy.deepcopy(bundle)
    log = played_round(reordered)["log"]
    position = discard["seq"] - 1
    log[position]["seq"], log[position + 1]["seq"] = log[position + 1]["seq"], log[position]["seq"]
    log.sort(key=lambda e: e["seq"])
    cases.append((reordered, ("chain", f"entry {discard['seq']}")))
    seeded = copy.deepcopy(bundle)
    seed = seeded["rounds"][0]["rng"]["seed"]
    seeded["rounds"][0]["rng"]["seed"] = ("1" if seed[0] == "0" else "0") + seed[1:]
    cases.append((seeded, ("commitment", "seed")))
    paid = copy.deepcopy(bundle)
    payout = next(t for t in paid["money"]["transfers"] if t["kind"] == "payout")
    payout["amount_cents"] -= 1
    cases.append((paid, ("money", f"transfer {payout['id']}")))
    swapped = copy.deepcopy(bundle)
    a, b = swapped["rounds"][0]["signature"], swapped["rounds"][1]["signature"]
    a["signature"], b["signature"] = b["signature"], a["signature"]
    cases.append((swapped, ("signature", "signature")))
    truncated = copy.deepcopy(bundle)
    truncated["rounds"][-1]["log"].pop()
    cases.append((truncated, ("chain", f"entry {len(bundle['rounds'][-1]['log'])}")))
    for tampered, expected in cases:
        assert failure(tampered) == expected


def test_a_rechained_and_resigned_event_edit_is_caught_by_the_replay(bundle):
    round_ = played_round(bundle)
    discard = log_entry(round_, lambda e: e["body"].get("type") == "discarded")
    discard["body"]["by_timeout"] = not discard["body"]["by_timeout"]
    rechain_and_resign(bundle, round_)
    assert failure(bundle) == ("replay", f"entry {discard['seq']}")


def test_a_rechained_log_signed_by_another_key_is_caught_by_the_signature(bundle):
    round_ = bundle["rounds"][0]
    # a note is chained but not replayed: only the chain's seal and the signature protect it
    round_["log"].append({"seq": len(round_["log"]) + 1, "kind": "note", "body": {"type": "x"}})
    rechain_and_resign(bundle, round_, FORGER)
    assert failure(bundle, public_keys={"dev1": SIGNER.public_key}) == ("signature", "signature")


def test_a_deal_that_does_not_come_from_the_seed_is_named_even_if_re_signed(bundle):
    round_ = bundle["rounds"][1]
    deal = log_entry(round_, lambda e: e["kind"] == "chance" and e["body"]["kind"] == "deal")
    value = deal["body"]["value"]
    value[0], value[1] = value[1], value[0]
    rechain_and_resign(bundle, round_)
    assert failure(bundle) == ("chance", f"entry {deal['seq']}")
    assert "(first difference at position 0)" in verify_bundle(bundle).failure.reason


def test_an_input_the_engine_refuses_or_that_changes_the_events_is_named(bundle):
    round_ = played_round(bundle)
    discard_input = log_entry(
        round_, lambda e: e["kind"] == "input" and e["body"]["type"] == "discard"
    )
    discard_input["body"]["card"] = 10_000
    rechain_and_resign(bundle, round_)
    check, item = failure(bundle)
    assert (check, item) == ("replay", f"entry {discard_input['seq']}")
    report = verify_bundle(bundle)
    assert "refuses" in report.failure.reason


def test_a_player_acting_for_another_seat_or_a_player_sent_timeout_is_named(bundle):
    timed = copy.deepcopy(bundle)
    round_ = played_round(bundle)
    move = log_entry(round_, lambda e: e["kind"] == "input" and "user" in e["body"]["source"])
    other = next(s["user_id"] for s in bundle["seats"] if s["engine_seat"] != move["body"]["seat"])
    move["body"]["source"]["user"] = other
    rechain_and_resign(bundle, round_)
    assert failure(bundle) == ("replay", f"entry {move['seq']}")
    round_ = played_round(timed)
    timeout = log_entry(round_, lambda e: e["kind"] == "input" and e["body"]["type"] == "timeout")
    timeout["body"]["source"] = {"user": bundle["seats"][0]["user_id"], "action_id": "x"}
    rechain_and_resign(timed, round_)
    assert failure(timed) == ("replay", f"entry {timeout['seq']}")


def test_a_wrong_final_state_or_broken_continuity_is_named(bundle):
    round_ = bundle["rounds"][0]
    round_["result"]["final_state_hash"] = "0" * 64
    rechain_and_resign(bundle, round_)
    assert failure(bundle) == ("final_state", "final state hash")
    gap = copy.deepcopy(bundle)
    del gap["rounds"][1]
    assert failure(gap) == ("format", "round 2")


def test_a_bundle_missing_its_subject_round_or_every_round_does_not_pass(bundle):
    # a forger drops the disputed round (and those after it) and says the table still plays
    bundle["table"]["status"] = "running"
    subject = bundle["subject"]["round_id"]
    assert subject == bundle["rounds"][-1]["id"]
    truncated = copy.deepcopy(bundle)
    del truncated["rounds"][-1]
    assert failure(truncated) == ("format", f"round {subject}")
    empty = copy.deepcopy(bundle)
    empty["rounds"] = []
    assert failure(empty) == ("format", "rounds")
    other = copy.deepcopy(bundle)
    other["subject"]["table_id"] = str(uuid.uuid4())
    assert failure(other) == ("format", "subject")


def test_seats_other_than_the_matchs_own_are_named(bundle):
    # who played is not in the signed records: the seats must be exactly the match's
    extra = copy.deepcopy(bundle)
    stranger = {"engine_seat": 4, "user_id": str(uuid.uuid4()), "entry_transfer_id": None}
    extra["seats"].append(stranger)
    assert failure(extra) == ("format", "seats")
    twice = copy.deepcopy(bundle)
    twice["seats"].append(dict(twice["seats"][0], user_id=str(uuid.uuid4())))
    assert failure(twice) == ("format", "seats")
    shared = copy.deepcopy(bundle)
    shared["seats"][3]["user_id"] = shared["seats"][0]["user_id"]
    assert failure(shared) == ("format", "seats")
    huge = copy.deepcopy(bundle)
    huge["rounds"][0]["start_state"]["seats"] = 10**15  # no list of that many seats is built
    assert failure(huge) == ("format", "seats")


def test_a_bundle_with_other_money_terms_fails_on_the_signatures(bundle):
    """The same match recorded with no fee: its money section is consistent in itself, so
    only the signed records (which carry currency, entry and fee since round-record/2) can
    tell a forger's fee-free copy from the real bundle."""
    from app.compliance.synthetic import SyntheticTable

    options = resolve_options("cacheta-raiz", {"lives": 4})
    free = SyntheticTable(options, 4, signer=SIGNER, index=3, fee_bps=0).play().bundle()
    assert verify_bundle(free).ok  # the honest fee-free table, signed as such
    assert [r["id"] for r in free["rounds"]] == [r["id"] for r in bundle["rounds"]]
    forged = copy.deepcopy(bundle)
    forged["table"], forged["money"] = free["table"], free["money"]
    assert forged["table"]["fee_bps"] == 0 and bundle["table"]["fee_bps"] > 0
    assert failure(forged, public_keys={"dev1": SIGNER.public_key}) == ("signature", "record")
    for round_ in forged["rounds"]:
        del round_["signature"]["record"]  # no stored record: the signature itself refuses
    assert failure(forged, public_keys={"dev1": SIGNER.public_key}) == (
        "signature",
        "record hash",
    )


def test_a_round_signed_in_the_legacy_format_still_verifies(bundle):
    """Rounds signed before round-record/2 (no money terms) keep verifying; naming the legacy
    format does not help a current round."""
    from app.compliance.record import LEGACY_RECORD_FORMAT

    legacy = copy.deepcopy(bundle)
    for round_ in legacy["rounds"]:
        record = signed_record(legacy["table"], round_, LEGACY_RECORD_FORMAT)
        assert set(record["table"]) == {"id", "game", "preset", "options"}
        sign(round_, record)
    assert verify_bundle(legacy, public_keys={"dev1": SIGNER.public_key}).ok
    downgraded = copy.deepcopy(bundle)
    round_ = downgraded["rounds"][0]
    round_["signature"]["record"] = signed_record(downgraded["table"], round_, LEGACY_RECORD_FORMAT)
    round_["signature"]["record_hash"] = record_hash(round_["signature"]["record"]).hex()
    assert failure(downgraded, public_keys={"dev1": SIGNER.public_key}) == (
        "signature",
        "signature",
    )


def test_the_offline_verifier_prints_pass_or_fail_and_exits_accordingly(bundle, tmp_path):
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    output = io.StringIO()
    assert offline_main([str(path), "--public-key", f"dev1:{SIGNER.public_key.hex()}"], output) == 0
    assert output.getvalue().startswith("PASS table ")
    output = io.StringIO()
    assert offline_main([str(path), "--public-key", f"dev1:{FORGER.public_key.hex()}"], output) == 1
    assert "signature" in output.getvalue()
    text = path.read_text()
    path.write_text(text.replace('"kept": ', '"kept": 1', 1) if '"kept": ' in text else text[:-2])
    output = io.StringIO()
    code = offline_main([str(path)], output)
    assert code in (1, 2) and output.getvalue().startswith(("FAIL", "ERROR"))
    output = io.StringIO()
    assert offline_main([str(tmp_path / "missing.json")], output) == 2


def test_the_offline_verifier_refuses_nan_and_infinity(bundle, tmp_path):
    # the one place the fast canonical encoder and the definition could agree on tampered
    # data: msgspec writes NaN as null, so a bundle may not carry NaN at all
    text = json.dumps(bundle)
    assert "null" in text
    for constant in ("NaN", "Infinity", "-Infinity"):
        path = tmp_path / f"{constant}.json"
        path.write_text(text.replace("null", constant, 1))
        output = io.StringIO()
        assert offline_main([str(path)], output) == 2
        assert f"{constant} is not a JSON value" in output.getvalue()


def test_the_offline_verifier_says_a_document_that_is_no_bundle_is_unreadable(tmp_path):
    # a JSON document that is not an object, or nested beyond what the parser takes, is an
    # unreadable file (exit 2 with a message), not a traceback
    for name, text in (("list", "[1]"), ("null", "null"), ("deep", "[" * 100_000 + "]" * 100_000)):
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        output = io.StringIO()
        assert offline_main([str(path)], output) == 2
        assert output.getvalue().startswith("ERROR cannot read ")
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"format": "raiz/dispute-bundle/1", "table": [1], "subject": [1]}))
    output = io.StringIO()
    assert offline_main([str(path)], output) == 1
    assert output.getvalue().startswith("FAIL round None: format: bundle: malformed")


def test_the_offline_verifier_passes_without_msgspec(bundle, tmp_path):
    # needs only `cryptography` and the pure engine: the canonical encoding falls back to
    # the standard library's definition and the verdict is the same
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    probe = (
        "import sys; sys.modules['msgspec'] = None\n"
        "from app.compliance.verify_bundle import main\n"
        f"sys.exit(main([{str(path)!r}, '--public-key', 'dev1:{SIGNER.public_key.hex()}']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS table ")


def test_the_offline_verifier_loads_no_database_or_web_code():
    probe = (
        "import sys, app.compliance.verify_bundle; "
        "bad = [m for m in ('sqlalchemy', 'asyncpg', 'litestar', 'pydantic') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
