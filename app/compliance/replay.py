"""Checks 1 to 4 of a round verification: commitment, chain, replay, final state.

:func:`app.compliance.verify.verify_round` runs them (its docstring lists every check);
this module holds them, pure (engine, ``rng``, stdlib).  :meth:`Replay.run` with
``chained=True`` is the single pass (the chain re-hashed while the engine replays, events
compared by canonical bytes); any doubt raises :class:`Diverged`, and the reference checks
(:func:`check_chain`, then ``run(chained=False)``) name the failure.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from app.compliance.encoding import (
    KIND_MEMBERS,
    canonical,
    chain_hash,
    event_bytes,
    event_dict,
    state_hash,
)
from app.compliance.failures import VerificationFailed, first_difference
from app.games.canonical import FAST_ENCODE, canonical_json_unchecked
from app.games.errors import GameError
from app.tables.hosting import GAMES
from app.tables.roundlog import genesis_hash
from rng.algorithms import UnknownVersionError, get_algorithm
from rng.streams import derive_stream

__all__ = (
    "PERMUTATION_KINDS",
    "TIMER_INPUTS",
    "Diverged",
    "Replay",
    "check_chain",
    "check_commitment",
    "check_final_state",
)

PERMUTATION_KINDS = frozenset({"deal", "reshuffle"})
TIMER_INPUTS = frozenset({"timeout", "abandon_win", "claim_window_closed"})
"""Inputs only a timer may send (the driver logs them with a ``deadline`` source)."""


class Diverged(Exception):
    """The fast pass found the chain or an event not as recorded (the reference checks say
    which and why)."""


def _describe(body: Any) -> str:
    if isinstance(body, dict):
        seq = body.get("seq")
        return f"{body.get('type', '?')}" + ("" if seq is None else f" (event seq {seq})")
    return repr(body)[:60]


def check_commitment(round_: Mapping[str, Any]) -> bytes:
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


def check_chain(round_: Mapping[str, Any]) -> None:
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


class Replay:
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
        Any chain discrepancy raises :class:`Diverged`, which names nothing: the caller runs
        the reference checks (:func:`check_chain`, then ``run(chained=False)``) to name the failure.
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
                    raise Diverged
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
                        raise Diverged
                else:
                    expected = event_dict(record)
                    if expected != body:
                        raise VerificationFailed(
                            "replay",
                            f"entry {seq}",
                            f"the engine produced {_describe(expected)}, the log differs: "
                            + first_difference(expected, body),
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
                    b"".join((previous, b'{"body":', encoded, KIND_MEMBERS[kind], b"%d}" % seq))
                ).digest()
                if computed.hex() != entry["hash"]:
                    raise Diverged
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
                raise Diverged
        if sorted(noted_seeds) != sorted(self.round["rng"].get("client_seeds", ())):
            raise VerificationFailed(
                "chance",
                "client seeds",
                "the client seeds noted in the log are not the ones the RNG service mixed",
            )
        return match, events


def check_final_state(
    round_: Mapping[str, Any], match: Any, events: Sequence[dict[str, Any]]
) -> Any:
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
            + first_difference(summary, result["summary"]),
        )
    return finished
