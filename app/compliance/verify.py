"""Verification of one finished round, from its data alone (pure: engine, ``rng``, stdlib).

The input is one round of a dispute bundle (``app/compliance/bundle.py`` describes the
format); the database-backed service, ``raiz audit verify-round`` / ``verify-all``, the API
and the offline verifier all build that same structure and call :func:`verify_round`, so
there is one implementation.  The checks run in this order and the first failure stops the
round, naming the item and why:

1. ``commitment``: the revealed seed hashes to the commitment the round stored before the
   deal, under the round's RNG version (and the RNG service's commitment is the round's);
2. ``chain``: entry 1, 2, ... n are all there, each hashes from the one before it
   (starting at the genesis hash bound to the round id and commitment), and the last hash
   and count are the ones sealed in the round result;
3. ``replay``: the start state hashes to its recorded hash and continues the previous
   round (round 1 must be a new match of the table's options); then the engine re-executes
   the log: every ``chance`` entry is the very draw the engine asked for and (``chance``)
   equals the draw re-derived from the seed and client seeds; every ``input`` (its
   ``source`` removed) is accepted by the engine and came from the right source (a player
   only for their own seat, timeouts and abandonment only from timers); every event the
   engine produces is the next ``event`` entry, field for field, and no other event is
   logged;
4. ``final_state``: the replayed state hashes to the round result's final state hash, and
   the result's summary is the round's ``round_ended`` (or ``match_ended``) event;
5. ``signature``: the record rebuilt from the data is the one signed, and its Ed25519
   signature verifies under the named key; ``inclusion``: when a checkpoint covers the
   round, the checkpoint's signature verifies and the audit path leads from the round's
   leaf to the checkpoint's root.

The money of the match (check ``money``, the last round of a finished table) is in
:mod:`app.compliance.money`.

Checks 1 to 4 are in :mod:`app.compliance.replay`. Checks 2 and 3 first run as one pass
(``Replay.run(chained=True)``: the chain re-hashed while the engine replays, events compared
by canonical bytes); at the first doubt the reference checks run in the order above and name
the failure, so every verdict is theirs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.compliance.failures import (
    CHECKS,
    Failure,
    RoundOutcome,
    VerificationFailed,
    first_difference,
)
from app.compliance.merkle import leaf_hash, verify_inclusion
from app.compliance.record import (
    LEGACY_RECORD_FORMAT,
    RECORD_FORMAT,
    record_hash,
    round_record,
)
from app.compliance.replay import Replay, check_chain, check_commitment, check_final_state
from app.compliance.signing import checkpoint_message, round_message, verify_signature

__all__ = (
    "CHECKS",
    "Failure",
    "RoundOutcome",
    "VerificationFailed",
    "check_signature",
    "checkpoint_head",
    "signed_record",
    "verify_checkpoint",
    "verify_round",
)


def signed_record(
    table: Mapping[str, Any], round_: Mapping[str, Any], record_format: str = RECORD_FORMAT
) -> dict[str, Any]:
    """The record of a bundle round (what its signature must cover)."""
    rng = round_["rng"]
    result = round_["result"]
    return round_record(
        table=table,
        round_id=round_["id"],
        number=round_["number"],
        start_state_hash=round_["start_state_hash"],
        rng_round_id=round_["rng_round_id"],
        rng_version=round_["rng_version"],
        commitment=round_["commitment"],
        seed=rng.get("seed"),
        client_seeds=rng.get("client_seeds", ()),
        fixed_streams=[s["label"] for s in rng.get("streams", ()) if s.get("fixed")],
        entries=result["entries"],
        last_hash=result["last_hash"],
        final_state_hash=result["final_state_hash"],
        summary=result["summary"],
        ended_at=result["ended_at"],
        record_format=record_format,
    )


def check_signature(
    table: Mapping[str, Any], round_: Mapping[str, Any], keys: Mapping[str, bytes]
) -> bytes:
    signature = round_.get("signature")
    if not signature:
        raise VerificationFailed("signature", "signature", "the round is not signed")
    stored = signature.get("record")
    legacy = isinstance(stored, Mapping) and stored.get("format") == LEGACY_RECORD_FORMAT
    record = signed_record(table, round_, LEGACY_RECORD_FORMAT if legacy else RECORD_FORMAT)
    if stored is not None and stored != record:
        raise VerificationFailed(
            "signature",
            "record",
            "the stored round differs from the record that was signed: "
            + first_difference(signature["record"], record),
        )
    digest = record_hash(record)
    if signature.get("record_hash") not in (None, digest.hex()):
        raise VerificationFailed(
            "signature", "record hash", "the round's record does not hash to the signed hash"
        )
    key = keys.get(signature["key_id"])
    if key is None:
        raise VerificationFailed(
            "signature", "key", f"signed with key {signature['key_id']!r}, which is not known"
        )
    if not verify_signature(key, bytes.fromhex(signature["signature"]), round_message(digest)):
        raise VerificationFailed(
            "signature",
            "signature",
            f"the signature does not verify under key {signature['key_id']!r}",
        )
    return digest


def checkpoint_head(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """The signed part of a checkpoint."""
    return {
        "tree_size": checkpoint["tree_size"],
        "root": checkpoint["root"],
        "created_at": checkpoint["created_at"],
        "key_id": checkpoint["key_id"],
    }


def verify_checkpoint(checkpoint: Mapping[str, Any], keys: Mapping[str, bytes]) -> str | None:
    """None if the checkpoint's signature verifies, else why not."""
    key = keys.get(checkpoint["key_id"])
    if key is None:
        return f"checkpoint {checkpoint['id']} is signed with unknown key {checkpoint['key_id']!r}"
    message = checkpoint_message(checkpoint_head(checkpoint))
    if not verify_signature(key, bytes.fromhex(checkpoint["signature"]), message):
        return f"the signature of checkpoint {checkpoint['id']} does not verify"
    return None


def _inclusion(
    round_: Mapping[str, Any],
    digest: bytes,
    checkpoints: Mapping[int, Mapping[str, Any]],
    keys: Mapping[str, bytes],
    notes: list[str],
) -> None:
    inclusion = round_.get("inclusion")
    if not inclusion:
        notes.append("no checkpoint covers this round yet")
        return
    checkpoint = checkpoints.get(inclusion["checkpoint_id"])
    if checkpoint is None:
        raise VerificationFailed(
            "inclusion", "checkpoint", f"checkpoint {inclusion['checkpoint_id']} is not available"
        )
    problem = verify_checkpoint(checkpoint, keys)
    if problem is not None:
        raise VerificationFailed("inclusion", f"checkpoint {checkpoint['id']}", problem)
    proven = verify_inclusion(
        leaf_hash(digest),
        inclusion["leaf_index"],
        checkpoint["tree_size"],
        [bytes.fromhex(item) for item in inclusion["audit_path"]],
        bytes.fromhex(checkpoint["root"]),
    )
    if not proven:
        raise VerificationFailed(
            "inclusion",
            f"leaf {inclusion['leaf_index']}",
            f"the audit path does not lead from the round's record to the root of checkpoint "
            f"{checkpoint['id']}",
        )


def verify_round(
    table: Mapping[str, Any],
    round_: Mapping[str, Any],
    *,
    previous_final_state_hash: str | None,
    seats: Mapping[int, str] | None,
    keys: Mapping[str, bytes],
    checkpoints: Mapping[int, Mapping[str, Any]],
    allow_fixed_streams: bool = False,
) -> RoundOutcome:
    """Run every check on one finished round of a bundle; never raises for bad data."""
    outcome = RoundOutcome(round_id=str(round_.get("id")), number=int(round_.get("number", 0)))
    try:
        if not round_.get("result"):
            raise VerificationFailed("format", "result", "the round has not finished")
        seed = check_commitment(round_)
        replay = Replay(
            table,
            round_,
            seed,
            previous_final_state_hash=previous_final_state_hash,
            seats=seats,
            allow_fixed_streams=allow_fixed_streams,
        )
        try:
            match, events = replay.run(chained=True)
        except Exception:  # the reference checks below name (or clear) it
            check_chain(round_)
            match, events = replay.run(chained=False)
        outcome.seats = int(round_["start_state"]["seats"])
        outcome.match_ended = check_final_state(round_, match, events)
        digest = check_signature(table, round_, keys)
        _inclusion(round_, digest, checkpoints, keys, outcome.notes)
    except VerificationFailed as failed:
        outcome.failure = failed.failure
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        outcome.failure = Failure("format", "round data", f"malformed: {error!r}")
    return outcome
