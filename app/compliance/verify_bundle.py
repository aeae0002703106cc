"""Verify a dispute bundle offline: ``python -m app.compliance.verify_bundle bundle.json``.

Needs no database and no access to the service: only this repository's pure rules engine
(``app/games``), the RNG formulas (``rng``), the verifier (``app/compliance``) and the
``cryptography`` package.  It re-executes every round of the bundle and prints ``PASS`` (exit
0), or ``FAIL`` with the check, the first bad item and why (exit 1).  An unreadable file exits
2.  ``--public-key KEY_ID:HEX`` pins a signing key (repeatable) instead of trusting the keys
inside the bundle; ``--json`` prints the full report.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TextIO

from app.compliance.bundle import verify_bundle

__all__ = ("main",)

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_UNREADABLE = 2


def _refuse_constant(name: str) -> None:
    # NaN and Infinity are not JSON, and no stored value is a float (app/games/canonical.py)
    raise ValueError(f"{name} is not a JSON value")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m app.compliance.verify_bundle",
        description="Re-execute and verify a Raiz dispute bundle with no database.",
    )
    parser.add_argument("bundle", help="the bundle file (raiz audit export-round)")
    parser.add_argument(
        "--public-key",
        action="append",
        default=[],
        metavar="KEY_ID:HEX",
        help="a trusted Ed25519 public key (raw, hex); repeat for several",
    )
    parser.add_argument(
        "--allow-fixed-streams",
        action="store_true",
        help="accept draws a test deployment scripted (never valid in production)",
    )
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    return parser


def main(argv: Sequence[str] | None = None, output: TextIO | None = None) -> int:
    """Run the verifier; returns the exit status."""
    out = sys.stdout if output is None else output
    arguments = _parser().parse_args(argv)
    try:
        with open(arguments.bundle, encoding="utf-8") as file:
            bundle = json.load(file, parse_constant=_refuse_constant)
        if not isinstance(bundle, dict):
            raise ValueError("the document is not a JSON object")
        pinned = None
        if arguments.public_key:
            pinned = {}
            for item in arguments.public_key:
                key_id, _, hex_key = item.partition(":")
                pinned[key_id] = bytes.fromhex(hex_key)
    except (OSError, ValueError, RecursionError) as error:
        print(f"ERROR cannot read {arguments.bundle}: {error}", file=out)
        return EXIT_UNREADABLE
    report = verify_bundle(
        bundle, public_keys=pinned, allow_fixed_streams=arguments.allow_fixed_streams
    )
    if arguments.json:
        print(json.dumps(report.to_dict(), indent=2), file=out)
    subject = bundle.get("subject")
    subject = subject.get("round_id") if isinstance(subject, dict) else None
    if report.ok:
        print(
            f"PASS table {report.table_id}: {len(report.rounds)} rounds re-executed "
            f"(subject round {subject})",
            file=out,
        )
        for note in report.notes:
            print(f"note: {note}", file=out)
        for outcome in report.rounds:
            for note in outcome.notes:
                print(f"note: round {outcome.number}: {note}", file=out)
        return EXIT_PASS
    print(f"FAIL round {report.failed_round}: {report.failure}", file=out)
    return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
