"""Benchmark round verification: rounds verified per second on one core, and where the time goes.

Run from the repository root::

    python ops/bench/bench_verify.py [--matches 100] [--players 4] [--lives 7] [--instructions]

Not a test: it prints figures and asserts nothing but that every round verifies (best of
three runs).  The rounds are bot matches recorded the way the table driver records them
(``app.compliance.synthetic``): chance drawn from ``rng`` streams, every input with its
source, results signed with Ed25519.  The pure verifier is what ``raiz audit verify-all``,
the API and the offline verifier all run; ``verify-all`` adds the database reads (it prints
both rates).

Parts, each timed alone over the same rounds:

* *draws*: the commitment and re-deriving every deal and reshuffle from the seed;
* *engine*: restoring the start state and re-applying every logged input and draw (the
  rules engine alone, no comparison);
* *signature*: rebuilding the record, hashing it and checking Ed25519;
* *chain+log*: the rest, measured as the total minus the parts above: re-hashing every log
  entry, comparing each logged event with the engine's (canonical bytes), the input sources,
  the start and final state hashes and the bundle's own checks.  Since 2026-11-30 the chain
  is re-hashed during the replay, in the same pass, so it is no longer timed alone.

Then, timed alone, the *library floor*: the calls into compiled libraries that any verifier
of this record format makes whatever language its own loop is in -- one Ed25519 verification
(``cryptography``), one SHA-256 per log entry (``hashlib``) and the canonical encoding of every
entry body (``msgspec``) -- and the *budget* of the 2,000 rounds/s goal (500 µs) left for the
engine and everything else once the floor and the draws are paid.

``--instructions`` counts instead of timing: the same rounds are verified under valgrind's
callgrind, which counts the instructions the process executes, and the figure is
instructions per round (the count of a run that verifies minus that of a run that only loads
the rounds and verifies one warm-up match).  Seconds depend on the machine and on its
neighbours (the machines this project is measured on have differed threefold between
sessions, and drifted within one); the count does not, so it is the way to compare two
versions of the code on a noisy machine.  It is no estimate of seconds: valgrind hides some
CPU features, and the cryptographic libraries then take slower generic paths, so Ed25519 and
SHA-256 weigh more in the count than in time.  A few minutes for ``--matches 10``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.compliance.bundle import bundle_keys, verify_bundle
from app.compliance.encoding import KIND_MEMBERS
from app.compliance.replay import check_commitment
from app.compliance.signing import Signer, round_message, verify_signature
from app.compliance.synthetic import synthetic_bundle
from app.compliance.verify import check_signature
from app.config import DEV_SIGNING_KEYRING
from app.games import resolve_options, restore
from app.games.canonical import FAST_ENCODE, canonical_json_unchecked
from app.tables.roundlog import genesis_hash
from rng.streams import derive_stream

RUNS = 3
GOAL_ROUNDS_PER_SECOND = 2_000


def _best(work) -> float:
    best = float("inf")
    for _ in range(RUNS):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def verify_bundles(bundles: list[dict[str, Any]], keys: dict[str, bytes]) -> None:
    """The verifier over every bundle (each must pass)."""
    for bundle in bundles:
        report = verify_bundle(bundle, public_keys=keys)
        assert report.ok, report.failure


def library_floor(rounds: list[dict[str, Any]], keys: dict[str, bytes]) -> None:
    """Only the compiled-library calls of a verification: Ed25519, SHA-256, JSON encoding
    (the chain is re-hashed to its sealed last hash, so the floor does the real hashing)."""
    encode = canonical_json_unchecked if FAST_ENCODE is None else FAST_ENCODE
    sha256 = hashlib.sha256
    for item in rounds:
        signature = item["signature"]
        message = round_message(bytes.fromhex(signature["record_hash"]))
        assert verify_signature(
            keys[signature["key_id"]], bytes.fromhex(signature["signature"]), message
        )
        previous = genesis_hash(uuid.UUID(item["id"]), item["commitment"])
        for entry in item["log"]:  # the very bytes the chain hashes (replay.Replay.run)
            previous = sha256(
                b"".join(
                    (
                        previous,
                        b'{"body":',
                        encode(entry["body"]),
                        KIND_MEMBERS[entry["kind"]],
                        b"%d}" % entry["seq"],
                    )
                )
            ).digest()
        assert previous.hex() == item["result"]["last_hash"]


def replay_engine(rounds: list[dict[str, Any]]) -> None:
    """The engine alone: restore each round's start and re-apply its draws and inputs."""
    for item in rounds:
        match = restore(item["start_state"])
        for entry in item["log"]:
            if entry["kind"] == "chance":
                match.apply_chance(entry["body"]["value"])
            elif entry["kind"] == "input":
                match.apply({k: v for k, v in entry["body"].items() if k != "source"})
        match.state_hash()


COUNTED = ("load", "verify", "engine")
"""The runs of ``--instructions``: the baseline, the verifier, the engine alone."""


def _counted_run(mode: str, path: str) -> None:
    """One run under callgrind: load the bundles, verify the first (imports, caches, first
    calls: the same in every run), then ``mode``'s work over the others."""
    bundles = pickle.loads(Path(path).read_bytes())
    keys = bundle_keys(bundles[0])
    verify_bundles(bundles[:1], keys)
    if mode == "verify":
        verify_bundles(bundles[1:], keys)
    elif mode == "engine":
        replay_engine([item for bundle in bundles[1:] for item in bundle["rounds"]])


def _instructions(mode: str, path: Path) -> int:
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--counted-run",
        mode,
        str(path),
    ]
    # a fixed hash seed: string hashes (and so set and dict layouts) are the same in every run
    environment = {**os.environ, "PYTHONHASHSEED": "0"}
    finished = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
    found = re.search(r"Collected : (\d+)", finished.stderr)
    if finished.returncode != 0 or found is None:
        raise SystemExit(f"valgrind failed ({mode}):\n{finished.stderr[-2000:]}")
    return int(found.group(1))


def count_instructions(bundles: list[dict[str, Any]], warm_up: dict[str, Any]) -> None:
    """Print instructions per round of the verifier and of the engine alone."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (Debian package valgrind)")
    rounds = sum(len(bundle["rounds"]) for bundle in bundles)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "bundles.pickle"
        path.write_bytes(pickle.dumps([warm_up, *bundles]))
        counts = {mode: _instructions(mode, path) for mode in COUNTED}
    for mode in COUNTED[1:]:
        per_round = (counts[mode] - counts["load"]) / rounds
        print(f"  {mode:<9} {per_round / 1e6:6.2f} million instructions/round (callgrind)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=100)
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--lives", type=int, default=7)
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions under callgrind"
    )
    parser.add_argument("--counted-run", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.counted_run:
        _counted_run(*args.counted_run)
        return
    signer = Signer.from_keyring(DEV_SIGNING_KEYRING)
    options = resolve_options("cacheta-raiz", {"lives": args.lives})
    started = time.perf_counter()
    bundles = [
        synthetic_bundle(options, args.players, signer, index=i) for i in range(args.matches)
    ]
    recorded = time.perf_counter() - started
    rounds = [(bundle, item) for bundle in bundles for item in bundle["rounds"]]
    entries = sum(len(item["log"]) for _, item in rounds)
    inputs = sum(1 for _, item in rounds for e in item["log"] if e["kind"] == "input")
    keys = bundle_keys(bundles[0])
    heading = (
        f"python {sys.version.split()[0]}, {args.matches} matches of {args.players} players, "
        f"{args.lives} lives: {len(rounds)} rounds, {entries / len(rounds):.0f} log entries and "
        f"{inputs / len(rounds):.0f} inputs per round"
    )
    if args.instructions:
        print(heading)
        warm_up = synthetic_bundle(options, args.players, signer, index=args.matches)
        count_instructions(bundles, warm_up)
        return

    def verify_all() -> None:
        verify_bundles(bundles, keys)

    def draws() -> None:
        for _, item in rounds:
            seed = check_commitment(item)
            for entry in item["log"]:
                body = entry["body"]
                if entry["kind"] == "chance" and body["kind"] in ("deal", "reshuffle"):
                    derive_stream(seed, body["label"]).permutation(len(body["value"]))

    def engine() -> None:
        replay_engine([item for _, item in rounds])

    def signatures() -> None:
        for bundle, item in rounds:
            check_signature(bundle["table"], item, keys)

    total = _best(verify_all)
    parts = {
        "draws": _best(draws),
        "engine": _best(engine),
        "signature": _best(signatures),
    }
    print(f"{heading} (recorded in {recorded:.1f} s)")
    print(f"verify: {len(rounds) / total:,.0f} rounds/s ({entries / total:,.0f} entries/s)")
    for name, seconds in parts.items():
        print(
            f"  {name:<9} {seconds / len(rounds) * 1e6:7.0f} µs/round  "
            f"{seconds / total:5.1%} of the total"
        )
    rest = total - sum(parts.values())
    share = f"{rest / total:5.1%} of the total"
    print(f"  {'chain+log':<9} {rest / len(rounds) * 1e6:7.0f} µs/round  {share}")
    floor = _best(lambda: library_floor([item for _, item in rounds], keys)) / len(rounds)
    budget = 1 / GOAL_ROUNDS_PER_SECOND
    left = budget - floor - parts["draws"] / len(rounds)
    print(
        f"library floor (Ed25519, SHA-256 and encoding of {entries / len(rounds):.0f} entries): "
        f"{floor * 1e6:.0f} µs/round; the goal's {budget * 1e6:.0f} µs leave "
        f"{left * 1e6:.0f} µs for the engine (measured above: "
        f"{parts['engine'] / len(rounds) * 1e6:.0f}) and the verifier's own loop"
    )


if __name__ == "__main__":
    main()
