"""Public verification: the happy path, every named failure, version dispatch and the CLI."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType

import pytest

import rng.algorithms
from rng.algorithms import ALGORITHMS
from rng.shuffle import MAX_PERMUTATION_SIZE
from rng.streams import commitment, derive_stream, mix_client_seeds
from rng.verification import (
    MAX_PLAYER_COUNT,
    MAX_RESHUFFLES,
    VerificationError,
    VerificationFailure,
    verify_round,
)
from rng.verify import EXIT_NOT_VERIFIED, EXIT_VERIFIED, main

REPOSITORY_ROOT = Path(__file__).resolve().parents[3]
SEED = bytes.fromhex("3c" * 32)
SEED_HEX = SEED.hex()
CLIENT_SEEDS = [b"alice's seed", bytes.fromhex("00ff00ff")]
CLIENT_SEEDS_HEX = [client_seed.hex() for client_seed in CLIENT_SEEDS]
COMMITMENT = commitment(SEED)


def test_happy_path_recomputes_every_stream() -> None:
    result = verify_round(
        COMMITMENT.upper(),
        SEED_HEX.upper(),
        [text.upper() for text in CLIENT_SEEDS_HEX],
        "raiz-rng/1",
        104,
        reshuffle_sizes=[57, 12],
        player_count=4,
    )
    assert result.version == "raiz-rng/1"
    assert result.commitment == COMMITMENT
    assert result.seed == SEED_HEX
    assert result.client_seeds == tuple(CLIENT_SEEDS_HEX)
    assert result.mixed_seed == mix_client_seeds(SEED, CLIENT_SEEDS).hex()
    assert list(result.deal) == derive_stream(SEED, "deal", CLIENT_SEEDS).permutation(104)
    assert [(item.label, item.size) for item in result.reshuffles] == [
        ("reshuffle/1", 57),
        ("reshuffle/2", 12),
    ]
    assert list(result.reshuffles[1].permutation) == derive_stream(
        SEED, "reshuffle/2", CLIENT_SEEDS
    ).permutation(12)
    assert result.first_dealer is not None
    assert result.first_dealer.player_count == 4
    assert result.first_dealer.seat == derive_stream(SEED, "first_dealer", CLIENT_SEEDS).randbelow(
        4
    )


def test_minimal_round() -> None:
    result = verify_round(COMMITMENT, SEED_HEX, [], "raiz-rng/1", 1)
    assert result.deal == (0,)
    assert result.reshuffles == ()
    assert result.first_dealer is None
    assert result.to_json_dict()["first_dealer"] is None


def test_client_seeds_change_the_deal_but_not_the_commitment() -> None:
    with_seeds = verify_round(COMMITMENT, SEED_HEX, CLIENT_SEEDS_HEX, "raiz-rng/1", 52)
    without = verify_round(COMMITMENT, SEED_HEX, [], "raiz-rng/1", 52)
    reordered = verify_round(COMMITMENT, SEED_HEX, CLIENT_SEEDS_HEX[::-1], "raiz-rng/1", 52)
    assert len({with_seeds.deal, without.deal, reordered.deal}) == 3


def failure_of(**overrides: object) -> VerificationFailure:
    arguments: dict[str, object] = {
        "commitment_hex": COMMITMENT,
        "seed_hex": SEED_HEX,
        "client_seeds_hex": CLIENT_SEEDS_HEX,
        "version": "raiz-rng/1",
        "deck_size": 104,
    }
    arguments.update(overrides)
    with pytest.raises(VerificationError) as caught:
        verify_round(**arguments)  # type: ignore[arg-type]
    return caught.value.failure


@pytest.mark.parametrize(
    ("overrides", "failure"),
    [
        ({"seed_hex": "3d" * 32}, VerificationFailure.COMMITMENT_MISMATCH),
        ({"commitment_hex": COMMITMENT[:-2] + "00"}, VerificationFailure.COMMITMENT_MISMATCH),
        ({"commitment_hex": COMMITMENT[:62]}, VerificationFailure.COMMITMENT_MISMATCH),
        ({"commitment_hex": commitment(bytes(32))}, VerificationFailure.COMMITMENT_MISMATCH),
        ({"version": "raiz-rng/0"}, VerificationFailure.UNKNOWN_VERSION),
        ({"version": ""}, VerificationFailure.UNKNOWN_VERSION),
        ({"commitment_hex": "xyz"}, VerificationFailure.INVALID_HEX),
        ({"commitment_hex": COMMITMENT + "0"}, VerificationFailure.INVALID_HEX),
        ({"seed_hex": "3c" * 31 + "3g"}, VerificationFailure.INVALID_HEX),
        ({"seed_hex": " " + SEED_HEX}, VerificationFailure.INVALID_HEX),
        ({"seed_hex": "3c 3c"}, VerificationFailure.INVALID_HEX),
        ({"seed_hex": None}, VerificationFailure.INVALID_HEX),
        ({"client_seeds_hex": ["0x01"]}, VerificationFailure.INVALID_HEX),
        ({"seed_hex": "3c" * 31}, VerificationFailure.INVALID_INPUT),
        ({"seed_hex": ""}, VerificationFailure.INVALID_INPUT),
        ({"client_seeds_hex": [""]}, VerificationFailure.INVALID_INPUT),
        ({"client_seeds_hex": ["aa" * 65]}, VerificationFailure.INVALID_INPUT),
        ({"client_seeds_hex": ["aa"] * 17}, VerificationFailure.INVALID_INPUT),
        ({"client_seeds_hex": "aa"}, VerificationFailure.INVALID_INPUT),
        ({"deck_size": 0}, VerificationFailure.INVALID_INPUT),
        ({"deck_size": MAX_PERMUTATION_SIZE + 1}, VerificationFailure.INVALID_INPUT),
        ({"deck_size": True}, VerificationFailure.INVALID_INPUT),
        ({"reshuffle_sizes": [10, 0]}, VerificationFailure.INVALID_INPUT),
        ({"reshuffle_sizes": [1] * (MAX_RESHUFFLES + 1)}, VerificationFailure.INVALID_INPUT),
        ({"reshuffle_sizes": "12"}, VerificationFailure.INVALID_INPUT),
        ({"player_count": 0}, VerificationFailure.INVALID_INPUT),
        ({"player_count": MAX_PLAYER_COUNT + 1}, VerificationFailure.INVALID_INPUT),
    ],
)
def test_every_failure_is_named(overrides: dict[str, object], failure: VerificationFailure) -> None:
    assert failure_of(**overrides) is failure


def test_mismatch_message_shows_both_commitments() -> None:
    wrong_seed = bytes.fromhex("3d" * 32)
    with pytest.raises(VerificationError) as caught:
        verify_round(COMMITMENT, wrong_seed.hex(), [], "raiz-rng/1", 4)
    assert f"commits to {commitment(wrong_seed)}" in str(caught.value)
    assert f"published commitment is {COMMITMENT}" in str(caught.value)


def test_rounds_verify_under_their_own_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """A later version changes the formulas; rounds stored as raiz-rng/1 still verify."""
    before = verify_round(COMMITMENT, SEED_HEX, CLIENT_SEEDS_HEX, "raiz-rng/1", 52)
    version_one = ALGORITHMS["raiz-rng/1"]

    def commitment_v2(seed: bytes) -> str:
        return hashlib.sha256(
            b"raiz-rng/2-test\x00commit\x00" + version_one.check_seed(seed)
        ).hexdigest()

    def permutation_v2(source: object, n: int) -> list[int]:
        return version_one.permutation(source, n)[::-1]  # type: ignore[arg-type]

    version_two = dataclasses.replace(
        version_one,
        version="raiz-rng/2-test",
        commitment=commitment_v2,
        permutation=permutation_v2,
    )
    monkeypatch.setattr(
        rng.algorithms,
        "ALGORITHMS",
        MappingProxyType({**ALGORITHMS, "raiz-rng/2-test": version_two}),
    )
    after = verify_round(COMMITMENT, SEED_HEX, CLIENT_SEEDS_HEX, "raiz-rng/1", 52)
    assert after == before
    new_round = verify_round(
        commitment(SEED, "raiz-rng/2-test"), SEED_HEX, CLIENT_SEEDS_HEX, "raiz-rng/2-test", 52
    )
    assert new_round.version == "raiz-rng/2-test"
    assert new_round.deal != before.deal
    # A version-1 commitment does not pass as a version-2 one.
    assert failure_of(version="raiz-rng/2-test") is VerificationFailure.COMMITMENT_MISMATCH


def test_the_registry_is_read_only() -> None:
    with pytest.raises(TypeError):
        ALGORITHMS["raiz-rng/9"] = ALGORITHMS["raiz-rng/1"]  # type: ignore[index]


# --- command line -------------------------------------------------------------------------


def run_main(*argv: str) -> tuple[int, dict[str, object]]:
    output = io.StringIO()
    status = main(list(argv), output)
    return status, json.loads(output.getvalue())


def test_cli_success() -> None:
    status, document = run_main(
        "--commitment",
        COMMITMENT,
        "--seed",
        SEED_HEX,
        "--client-seed",
        CLIENT_SEEDS_HEX[0],
        "--client-seed",
        CLIENT_SEEDS_HEX[1],
        "--deck-size",
        "104",
        "--reshuffle-size",
        "57",
        "--players",
        "4",
    )
    assert status == EXIT_VERIFIED
    expected = verify_round(
        COMMITMENT,
        SEED_HEX,
        CLIENT_SEEDS_HEX,
        "raiz-rng/1",
        104,
        reshuffle_sizes=[57],
        player_count=4,
    )
    assert document == expected.to_json_dict()


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--seed", "3d" * 32, "--deck-size", "4"], "commitment_mismatch"),
        (["--seed", SEED_HEX, "--deck-size", "4", "--version", "raiz-rng/0"], "unknown_version"),
        (["--seed", "nothex", "--deck-size", "4"], "invalid_hex"),
        (["--seed", SEED_HEX, "--deck-size", "0"], "invalid_input"),
    ],
)
def test_cli_failures(argv: list[str], error: str) -> None:
    status, document = run_main("--commitment", COMMITMENT, *argv)
    assert status == EXIT_NOT_VERIFIED
    assert document["ok"] is False
    assert document["error"] == error
    assert isinstance(document["message"], str)


def test_cli_requires_the_commitment_seed_and_deck_size() -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--seed", SEED_HEX], io.StringIO())
    assert caught.value.code == 2


def test_python_dash_m_runs_cleanly() -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            "-m",
            "rng.verify",
            "--commitment",
            COMMITMENT,
            "--seed",
            SEED_HEX,
            "--deck-size",
            "40",
        ],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == EXIT_VERIFIED, completed.stderr
    assert completed.stderr == ""
    assert json.loads(completed.stdout)["deal"] == derive_stream(SEED, "deal").permutation(40)
