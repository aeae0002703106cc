"""Check a revealed round from the command line, with no access to the service.

Usage::

    python -m rng.verify --commitment HEX --seed HEX [--client-seed HEX ...]
        [--version raiz-rng/1] --deck-size 104 [--reshuffle-size N ...] [--players N]

Prints one JSON object on standard output. On success it has ``"ok": true`` and the deck order
(``deal``), every requested reshuffle and the first-dealer seat; the exit status is 0. If the
round does not verify it has ``"ok": false``, an ``error`` code (see
:class:`rng.verification.VerificationFailure`) and a ``message``; the exit status is 1. Give the
client seeds in the order the round recorded them. The algorithms are documented in
``docs/rng.md``.

This module also re-exports :func:`rng.verification.verify_round` and its result types, so
``from rng.verify import verify_round`` works. (The implementation lives in
:mod:`rng.verification` so that ``python -m rng.verify`` does not execute a module the package
has already imported.)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Final, TextIO

from rng.streams import ALGORITHM_VERSION
from rng.verification import (
    FirstDealerDraw,
    ReshuffleResult,
    VerificationError,
    VerificationFailure,
    VerificationResult,
    verify_round,
)

__all__ = (
    "EXIT_NOT_VERIFIED",
    "EXIT_VERIFIED",
    "FirstDealerDraw",
    "ReshuffleResult",
    "VerificationError",
    "VerificationFailure",
    "VerificationResult",
    "format_json",
    "main",
    "verify_round",
)

EXIT_VERIFIED: Final = 0
"""Exit status when the commitment matched and the streams were recomputed."""
EXIT_NOT_VERIFIED: Final = 1
"""Exit status when the round did not verify (argument syntax errors exit with 2)."""


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rng.verify",
        description="Verify a Raiz round: check the seed against its commitment and "
        "recompute the deck order and the other draws.",
    )
    parser.add_argument("--commitment", required=True, help="published commitment, hex")
    parser.add_argument("--seed", required=True, help="revealed round seed, hex")
    parser.add_argument(
        "--client-seed",
        action="append",
        default=[],
        dest="client_seeds",
        metavar="HEX",
        help="a client seed, hex; repeat in the order the round recorded them",
    )
    parser.add_argument(
        "--version",
        default=ALGORITHM_VERSION,
        help=f"algorithm version stored with the round (default: {ALGORITHM_VERSION})",
    )
    parser.add_argument("--deck-size", required=True, type=int, help="cards in the deal")
    parser.add_argument(
        "--reshuffle-size",
        action="append",
        default=[],
        type=int,
        dest="reshuffle_sizes",
        metavar="N",
        help="cards in reshuffle/1, then reshuffle/2, ...; repeat per reshuffle",
    )
    parser.add_argument("--players", type=int, help="seats for the first-dealer draw")
    return parser


def format_json(document: dict[str, object]) -> str:
    """One top-level key per line, each value compact: valid JSON that stays readable."""
    lines = [f"  {json.dumps(key)}: {json.dumps(value)}" for key, value in document.items()]
    return "{\n" + ",\n".join(lines) + "\n}"


def main(argv: Sequence[str] | None = None, output: TextIO | None = None) -> int:
    """Run the verifier; returns the exit status."""
    stream = sys.stdout if output is None else output
    arguments = _build_parser().parse_args(argv)
    try:
        result = verify_round(
            arguments.commitment,
            arguments.seed,
            arguments.client_seeds,
            arguments.version,
            arguments.deck_size,
            reshuffle_sizes=arguments.reshuffle_sizes,
            player_count=arguments.players,
        )
    except VerificationError as error:
        document: dict[str, object] = {
            "ok": False,
            "error": error.failure.value,
            "message": str(error),
        }
        print(format_json(document), file=stream)
        return EXIT_NOT_VERIFIED
    print(format_json(result.to_json_dict()), file=stream)
    return EXIT_VERIFIED


if __name__ == "__main__":
    raise SystemExit(main())
