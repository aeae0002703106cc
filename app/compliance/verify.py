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

Checks 2 and 3 first run as one pass (``_Replay.run(chained=True)``: the chain re-hashed while
the engine replays, events compared by canonical bytes); at the first doubt the reference
checks run in the order above and name the failure, so every verdict is theirs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.compliance.merkle import leaf_hash, verify_inclusion
from app.compliance.record import (
    LEGACY_RECORD_FORMAT,
    RECORD_FORMAT,
    record_hash,
    round_record,
)
from app.compliance.signing import checkpoint_message, round_message, verify_signature
from app.games.canonical import FAST_ENCODE, canonical_json_unchecked
from app.games.errors import GameError
from app.tables.hosting import GAMES
from app.tables.roundlog import genesis_hash
from rng.algorithms import UnknownVersionError, get_algorithm
from rng.streams import derive_stream

__all__ = (
    "CHECKS",
    "Failure",
    "RoundOutcome",
    "VerificationFailed",
    "chain_hash",
    "checkpoint_head",
    "event_dict",
    "verify_checkpoint",
    "verify_round",
)

CHECKS = (
    "format",
    "commitment",
    "chain",
    "chance",
    "replay",
    "final_state",
    "continuity",
    "money",
    "signature",
    "inclusion",
)
"""Every check a failure can name."""
PERMUTATION_KINDS = frozenset({"deal", "reshuffle"})
TIMER_INPUTS = frozenset({"timeout", "abandon_win", "claim_window_closed"})
"""Inputs only a timer may send (the driver logs them with a ``deadline`` source)."""


@dataclass(frozen=True, slots=True)
class Failure:
    """The first thing wrong with a round: which check, which item, and why."""

    check: str
    """One of :data:`CHECKS`."""
    item: str
    """What is wrong: ``entry 17``, ``seed``, ``transfer settle:.../payout/0``..."""
    reason: str
    """Why, in one sentence."""

    def __str__(self) -> str:
        return f"{self.check}: {self.item}: {self.reason}"

    def to_dict(self) -> dict[str, str]:
        """JSON form."""
        return {"check": self.check, "item": self.item, "reason": self.reason}


class VerificationFailed(Exception):
    """Raised inside the checks; carries the :class:`Failure`."""

    def __init__(self, check: str, item: str, reason: str) -> None:
        super().__init__(f"{check}: {item}: {reason}")
        self.failure = Failure(check, item, reason)


@dataclass(slots=True)
class RoundOutcome:
    """What verifying one round found (and what the money check needs)."""

    round_id: str
    number: int
    failure: Failure | None = None
    notes: list[str] = field(default_factory=list)
    match_ended: dict[str, Any] | None = None
    """The ``match_ended`` event, if this round ended the match."""
    seats: int = 0
    """Seats of the match."""

    @property
    def ok(self) -> bool:
        """Whether every check passed."""
        return self.failure is None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "round_id": self.round_id,
            "number": self.number,
            "ok": self.ok,
            "failure": None if self.failure is None else self.failure.to_dict(),
            "notes": list(self.notes),
        }


def canonical(value: Any) -> bytes:
    """Canonical JSON of stored data, without the float scan (see :mod:`app.games.canonical`)."""
    return canonical_json_unchecked(value)


def state_hash(match: Any) -> str:
    """``match.state_hash()``, without the float scan."""
    return hashlib.sha256(canonical_json_unchecked(match.snapshot())).hexdigest()


def chain_hash(previous: bytes, seq: int, kind: str, body: Any) -> bytes:
    """``entry_hash`` of :mod:`app.tables.roundlog`, without the float scan."""
    return hashlib.sha256(
        previous + canonical_json_unchecked({"seq": seq, "kind": kind, "body": body})
    ).digest()


_EVENT_FIELDS: dict[type, tuple[str, ...]] = {}
_CONTAINERS = (tuple, list, dict)


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind is tuple or kind is list:
        return [_plain(item) if type(item) in _CONTAINERS else item for item in value]
    if kind is dict:
        return {
            key: _plain(item) if type(item) in _CONTAINERS else item for key, item in value.items()
        }
    return value


def event_dict(event: Any) -> dict[str, Any]:
    """``event.to_dict()``, computed faster (field names cached per event class)."""
    cls = type(event)
    names = _EVENT_FIELDS.get(cls)
    if names is None:
        names = _EVENT_FIELDS[cls] = tuple(field.name for field in dataclasses.fields(cls))
    data: dict[str, Any] = {"type": cls.type}
    for name in names:
        value = getattr(event, name)
        data[name] = _plain(value) if type(value) in _CONTAINERS else value
    return data


_TYPE_LAST: dict[type, bytes | None] = {}


def _type_member(cls: type) -> bytes | None:
    """``,"type":"<name>"}`` when ``type`` is the last key of the class's sorted dict form and
    the fast encoder writes dataclasses (else None)."""
    names = tuple(field.name for field in dataclasses.fields(cls))
    if FAST_ENCODE is None or any(name >= "type" for name in names):
        return None
    return b',"type":' + canonical_json_unchecked(cls.type) + b"}"  # type: ignore[attr-defined]


def event_bytes(event: Any) -> bytes:
    """``canonical(event.to_dict())``, computed faster.

    ``msgspec`` writes a dataclass as an object of its fields in sorted order; the event's
    ``type`` (a class attribute, not a field) sorts after every field of most events, so it
    is appended before the closing brace.  Other events, or no ``msgspec``, take the dict
    route.  ``tests/unit/compliance/test_verifier.py`` checks the two agree on every event
    the engine produces.
    """
    cls = type(event)
    member = _TYPE_LAST.get(cls, b"")
    if member == b"":
        member = _TYPE_LAST[cls] = _type_member(cls)
    if member is None or FAST_ENCODE is None:
        return canonical_json_unchecked(event_dict(event))
    return FAST_ENCODE(event)[:-1] + member


_KIND_MEMBERS = {
    kind: b',"kind":' + canonical_json_unchecked(kind) + b',"seq":'
    for kind in ("event", "input", "chance", "note")
}


class _Diverged(Exception):
    """The fast pass found the chain or an event not as recorded (the reference checks say
    which and why)."""


def _describe(body: Any) -> str:
    if isinstance(body, dict):
        seq = body.get("seq")
        return f"{body.get('type', '?')}" + ("" if seq is None else f" (event seq {seq})")
    return repr(body)[:60]


def _first_difference(expected: Mapping[str, Any], found: Mapping[str, Any]) -> str:
    for key in sorted(set(expected) | set(found)):
        if expected.get(key, ...) != found.get(key, ...):
            return f"{key}: expected {expected.get(key)!r:.80}, found {found.get(key)!r:.80}"
    return "no field differs"


def _commitment(round_: Mapping[str, Any]) -> bytes:
    rng = round_["rng"]
    seed_hex = rng.get("seed")
    if not seed_hex:
        raise VerificationFailed("commitment", "seed", "the round's seed is not revealed")
    if rng.get("commitment") != round_["commitment"] or rng.get("version") != round_["rng_version"]:
        raise VerificationFailed(
            "commitment",
            "commitment",
            f"the round stored commitment {round_['commitment']} ({round_['rng_version']}), "
            f"the RNG service has {rng.get('commitment')} ({rng.get('version')})",
        )
    try:
        algorithm = get_algorithm(round_["rng_version"])
        seed = bytes.fromhex(seed_hex)
        computed = algorithm.commitment(seed)
    except (UnknownVersionError, ValueError) as error:
        raise VerificationFailed(
            "commitment", "seed", f"unusable seed or version: {error}"
        ) from None
    if not hmac.compare_digest(computed, round_["commitment"]):
        raise VerificationFailed(
            "commitment",
            "seed",
            f"the revealed seed hashes to {computed} under {round_['rng_version']}, not to the "
            f"commitment {round_['commitment']} published before the deal",
        )
    return seed


def _chain(round_: Mapping[str, Any]) -> None:
    result = round_["result"]
    previous = genesis_hash(uuid.UUID(round_["id"]), round_["commitment"])
    expected_seq = 1
    for entry in round_["log"]:
        seq = entry["seq"]
        if seq != expected_seq:
            if seq > expected_seq:
                reason = f"missing: entry {seq} follows entry {expected_seq - 1}"
                raise VerificationFailed("chain", f"entry {expected_seq}", reason)
            raise VerificationFailed(
                "chain", f"entry {seq}", f"out of order: found after entry {expected_seq - 1}"
            )
        computed = chain_hash(previous, seq, entry["kind"], entry["body"])
        if computed.hex() != entry["hash"]:
            raise VerificationFailed(
                "chain",
                f"entry {seq}",
                f"the {entry['kind']} {_describe(entry['body'])} does not hash to its recorded "
                "hash: the entry was altered, moved or replaced",
            )
        previous = computed
        expected_seq += 1
    count = expected_seq - 1
    if count != result["entries"]:
        raise VerificationFailed(
            "chain",
            f"entry {min(count, result['entries']) + 1}",
            f"the log has {count} entries, the round result sealed {result['entries']}",
        )
    if previous.hex() != result["last_hash"]:
        raise VerificationFailed(
            "chain", f"entry {count}", "the last hash differs from the one sealed in the result"
        )


class _Replay:
    """Re-executes one round's log with the engine."""

    def __init__(
        self,
        table: Mapping[str, Any],
        round_: Mapping[str, Any],
        seed: bytes,
        *,
        previous_final_state_hash: str | None,
        seats: Mapping[int, str] | None,
        allow_fixed_streams: bool,
    ) -> None:
        self.table = table
        self.round = round_
        self.seed = seed
        self.previous = previous_final_state_hash
        self.seats = seats
        self.allow_fixed = allow_fixed_streams
        rng = round_["rng"]
        self.client_seeds = [bytes.fromhex(item) for item in rng.get("client_seeds", ())]
        self.fixed = {stream["label"] for stream in rng.get("streams", ()) if stream.get("fixed")}
        self.version = round_["rng_version"]
        spec = GAMES.get(table["game"])
        if spec is None:
            raise VerificationFailed("format", "table", f"unknown game {table['game']!r}")
        self.spec = spec

    def start(self) -> tuple[Any, Sequence[Any]]:
        """The match at the start of the round, and the events its creation logged (round 1)."""
        round_ = self.round
        state = round_["start_state"]
        number = round_["number"]
        encoded = canonical(state)
        if hashlib.sha256(encoded).hexdigest() != round_["start_state_hash"]:
            raise VerificationFailed(
                "continuity", "start state", "the start state does not hash to its recorded hash"
            )
        try:
            match = self.spec.restore(state)
        except GameError as error:
            raise VerificationFailed("replay", "start state", error.message) from None
        opening: list[Any] = []
        if number == 1:
            try:
                fresh = self.spec.new_match(
                    self.spec.options_from_dict(dict(self.table["options"])), state["seats"]
                )
            except (GameError, KeyError, TypeError) as error:
                raise VerificationFailed("continuity", "start state", str(error)) from None
            if canonical(fresh.snapshot()) != encoded:
                raise VerificationFailed(
                    "continuity",
                    "start state",
                    "round 1 does not start from a new match with the table's options",
                )
            opening = list(fresh.events)
        elif self.previous is None:
            raise VerificationFailed(
                "continuity", "start state", f"round {number - 1} is not available"
            )
        elif self.previous != round_["start_state_hash"]:
            raise VerificationFailed(
                "continuity",
                "start state",
                f"round {number} starts from state {round_['start_state_hash']}, "
                f"but round {number - 1} ended in {self.previous}",
            )
        return match, opening

    def chance_value(self, match: Any, seq: int, body: Mapping[str, Any]) -> Any:
        request = match.pending_chance()
        item = f"entry {seq}"
        if request is None:
            raise VerificationFailed("replay", item, "a chance entry where the engine wants none")
        wanted = (request.kind, request.round_number, request.label)
        found = (body.get("kind"), body.get("round"), body.get("label"))
        if body.get("type") != "chance" or wanted != found:
            raise VerificationFailed(
                "replay",
                item,
                f"the engine asked for the {request.label} draw of round "
                f"{request.round_number}, the log has {found}",
            )
        logged = body.get("value")
        if request.label in self.fixed:
            if not self.allow_fixed:
                raise VerificationFailed(
                    "chance",
                    item,
                    f"stream {request.label} was a test-only fixed deck, not drawn from the seed",
                )
            return logged
        stream = derive_stream(self.seed, request.label, self.client_seeds, self.version)
        if request.kind in PERMUTATION_KINDS:
            derived: Any = stream.permutation(request.size)
        else:
            derived = stream.randbelow(request.size)
        if logged != derived:
            where = ""
            if isinstance(logged, list) and isinstance(derived, list):
                position = next(
                    (i for i, (a, b) in enumerate(zip(logged, derived, strict=False)) if a != b),
                    min(len(logged), len(derived)),
                )
                where = f" (first difference at position {position})"
            raise VerificationFailed(
                "chance",
                item,
                f"the {request.label} draw does not re-derive from the seed and client "
                f"seeds{where}",
            )
        return derived

    def check_source(self, seq: int, action: Mapping[str, Any], source: Any) -> None:
        kind = action.get("type")
        if not isinstance(source, dict):
            raise VerificationFailed("replay", f"entry {seq}", "the input has no source")
        if kind in TIMER_INPUTS:
            if "deadline" not in source or "user" in source:
                raise VerificationFailed(
                    "replay",
                    f"entry {seq}",
                    f"{kind} came from {source!r}, only a timer may send it",
                )
            if kind == "abandon_win" and source.get("timer") != "abandon":
                raise VerificationFailed(
                    "replay",
                    f"entry {seq}",
                    "abandon_win came from a timer other than the abandon timer",
                )
            return
        user = source.get("user")
        if user is None:
            raise VerificationFailed(
                "replay", f"entry {seq}", f"the player input {kind} has no user"
            )
        if self.seats is not None:
            owner = self.seats.get(action.get("seat"))  # type: ignore[arg-type]
            if owner != user:
                raise VerificationFailed(
                    "replay",
                    f"entry {seq}",
                    f"seat {action.get('seat')}'s {kind} was sent by user {user}, "
                    f"who does not sit in that seat",
                )

    def run(self, *, chained: bool) -> tuple[Any, list[dict[str, Any]]]:
        """Replays the log; returns the final match and every event body of the round.

        ``chained``: also re-hash the chain in the same pass (the fast path, see
        :func:`verify_round`): an event entry is then checked by comparing its canonical bytes
        with the engine event's (:func:`event_bytes`), which the entry hash is computed from.
        Any chain discrepancy raises :class:`_Diverged`, which names nothing: the caller runs
        the reference checks (``_chain``, then ``run(chained=False)``) to name the failure.
        """
        match, produced = self.start()
        position = 0
        events: list[dict[str, Any]] = []
        noted_seeds: list[str] = []
        encode = canonical_json_unchecked if FAST_ENCODE is None else FAST_ENCODE
        sha256 = hashlib.sha256
        previous = genesis_hash(uuid.UUID(self.round["id"]), self.round["commitment"])
        expected_seq = 1
        encoded = b""
        for entry in self.round["log"]:
            kind, body, seq = entry["kind"], entry["body"], entry["seq"]
            if chained:
                # the entry bytes are assembled below, so seq must be the very int (True == 1)
                if seq != expected_seq or type(seq) is not int:
                    raise _Diverged
                expected_seq += 1
            if kind == "event":
                if position >= len(produced):
                    raise VerificationFailed(
                        "replay",
                        f"entry {seq}",
                        f"the log has event {_describe(body)}, which the engine did not produce",
                    )
                record = produced[position]
                position += 1
                if chained:
                    encoded = encode(body)
                    if encoded != event_bytes(record):
                        raise _Diverged
                else:
                    expected = event_dict(record)
                    if expected != body:
                        raise VerificationFailed(
                            "replay",
                            f"entry {seq}",
                            f"the engine produced {_describe(expected)}, the log differs: "
                            + _first_difference(expected, body),
                        )
                events.append(body)
            elif kind == "note":
                if body.get("type") == "client_seed":
                    noted_seeds.append(str(body.get("client_seed")))
                if chained:
                    encoded = encode(body)
            else:
                if position < len(produced):
                    raise VerificationFailed(
                        "replay",
                        f"entry {seq}",
                        f"the engine's event {_describe(event_dict(produced[position]))} is "
                        "missing before it",
                    )
                try:
                    if kind == "chance":
                        produced = match.apply_chance(self.chance_value(match, seq, body))
                    elif kind == "input":
                        action = dict(body)
                        source = action.pop("source", None)
                        self.check_source(seq, action, source)
                        produced = match.apply(action)
                    else:
                        raise VerificationFailed("format", f"entry {seq}", f"unknown kind {kind!r}")
                except GameError as error:
                    raise VerificationFailed(
                        "replay",
                        f"entry {seq}",
                        f"the engine refuses this {kind}: {error.code}: {error.message}",
                    ) from None
                position = 0
                if chained:
                    encoded = encode(body)
            if chained:
                # the canonical bytes of {"seq": seq, "kind": kind, "body": body} (chain_hash)
                computed = sha256(
                    b"".join((previous, b'{"body":', encoded, _KIND_MEMBERS[kind], b"%d}" % seq))
                ).digest()
                if computed.hex() != entry["hash"]:
                    raise _Diverged
                previous = computed
        if position < len(produced):
            raise VerificationFailed(
                "replay",
                "end of log",
                f"the engine's event {_describe(event_dict(produced[position]))} is missing "
                "from the log",
            )
        if chained:
            result = self.round["result"]
            if expected_seq - 1 != result["entries"] or previous.hex() != result["last_hash"]:
                raise _Diverged
        if sorted(noted_seeds) != sorted(self.round["rng"].get("client_seeds", ())):
            raise VerificationFailed(
                "chance",
                "client seeds",
                "the client seeds noted in the log are not the ones the RNG service mixed",
            )
        return match, events


def _final_state(round_: Mapping[str, Any], match: Any, events: Sequence[dict[str, Any]]) -> Any:
    result = round_["result"]
    final = state_hash(match)
    if final != result["final_state_hash"]:
        raise VerificationFailed(
            "final_state",
            "final state hash",
            f"the replay ends in state {final}, the round result records "
            f"{result['final_state_hash']}",
        )
    number = round_["number"]
    ended = next(
        (e for e in events if e.get("type") == "round_ended" and e.get("round") == number), None
    )
    finished = next((e for e in events if e.get("type") == "match_ended"), None)
    if ended is not None:
        summary = ended
    elif finished is not None:
        summary = {"result": "match_ended", **finished}
    else:
        raise VerificationFailed("final_state", "summary", f"round {number} never ended in its log")
    if summary != result["summary"]:
        raise VerificationFailed(
            "final_state",
            "summary",
            "the round result's summary is not the round's end event: "
            + _first_difference(summary, result["summary"]),
        )
    return finished


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


def _signature(
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
            + _first_difference(signature["record"], record),
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
        seed = _commitment(round_)
        replay = _Replay(
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
            _chain(round_)
            match, events = replay.run(chained=False)
        outcome.seats = int(round_["start_state"]["seats"])
        outcome.match_ended = _final_state(round_, match, events)
        digest = _signature(table, round_, keys)
        _inclusion(round_, digest, checkpoints, keys, outcome.notes)
    except VerificationFailed as failed:
        outcome.failure = failed.failure
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        outcome.failure = Failure("format", "round data", f"malformed: {error!r}")
    return outcome
