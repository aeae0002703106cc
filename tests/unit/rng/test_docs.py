"""``docs/rng.md`` stays true: its worked example, step-by-step values and standalone verifier
are recomputed here from the code, so the document cannot go stale.

The document marks each checked block with an HTML comment (``<!-- example:NAME -->``) on the
line before its code fence.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rng import version_1
from rng.drbg import HmacDrbg
from rng.shuffle import BlockStream, ByteSource, permutation, randbelow
from rng.streams import commitment, derive_stream, mix_client_seeds
from rng.verification import verify_round
from rng.verify import main

DOCUMENT = Path(__file__).resolve().parents[3] / "docs" / "rng.md"
BLOCK_PATTERN = r"<!-- example:{name} -->\n```[a-z]*\n(.*?)\n```"
TRACED_DRAWS = 8


def document_block(name: str) -> str:
    match = re.search(BLOCK_PATTERN.format(name=name), DOCUMENT.read_text("utf-8"), re.DOTALL)
    assert match is not None, f"docs/rng.md has no example:{name} block"
    return match.group(1)


def example_argv() -> list[str]:
    command = document_block("command").replace("\\\n", " ")
    words = shlex.split(command)
    assert words[:4] == ["$", "python", "-m", "rng.verify"]
    return words[4:]


def option_values(argv: list[str], option: str) -> list[str]:
    return [argv[index + 1] for index, word in enumerate(argv) if word == option]


class TracingSource:
    """Wraps a byte source and records every read: its offset in the stream and its bytes."""

    def __init__(self, source: ByteSource) -> None:
        self.source = source
        self.offset = 0
        self.reads: list[tuple[int, bytes]] = []

    def generate(self, n_bytes: int) -> bytes:
        output = self.source.generate(n_bytes)
        self.reads.append((self.offset, output))
        self.offset += n_bytes
        return output


def example_steps(seed: bytes, client_seeds: list[bytes]) -> str:
    """The step-by-step values the document shows for its worked example."""
    tag = version_1.VERSION.encode("ascii") + b"\x00"
    mix_message = tag + b"mix\x00" + bytes([len(client_seeds)])
    for client_seed in client_seeds:
        mix_message += bytes([len(client_seed)]) + client_seed
    mixed = mix_client_seeds(seed, client_seeds)
    first_block = version_1.stream_drbg(mixed, "deal").generate(version_1.STREAM_BLOCK_BYTES)
    lines = [
        f"commitment preimage  = {(tag + b'commit' + bytes(1)).hex()} || seed",
        f"commitment           = {commitment(seed)}",
        f"mix message          = {mix_message.hex()}",
        f"mixed seed           = {mixed.hex()}",
        f"deal nonce           = {version_1.stream_nonce('deal').hex()}",
        f"deal personalization = {version_1.stream_personalization('deal').hex()}",
        f"deal stream[0:32]    = {first_block[:32].hex()}",
        f"deal draws (first {TRACED_DRAWS} of the Fisher-Yates loop):",
    ]
    source = TracingSource(version_1.stream_bytes(mixed, "deal"))
    deck_size = 104
    for index in range(deck_size - 1, deck_size - 1 - TRACED_DRAWS, -1):
        bound = index + 1
        bits = (bound - 1).bit_length()
        mask = (1 << bits) - 1
        source.reads.clear()
        drawn = randbelow(source, bound)
        attempts = []
        for offset, output in source.reads:
            candidate = int.from_bytes(output, "big") & mask
            verdict = "accept" if candidate < bound else "reject"
            attempts.append(f"[{offset}] {output.hex()} & {mask:#x} = {candidate} {verdict}")
        lines.append(f"  i={index} randbelow({bound}): " + "; ".join(attempts) + f" -> j={drawn}")
    return "\n".join(lines)


def test_worked_example_output_is_what_the_cli_prints() -> None:
    output = io.StringIO()
    assert main(example_argv(), output) == 0
    assert output.getvalue().rstrip("\n") == document_block("output")


def test_worked_example_steps() -> None:
    argv = example_argv()
    seed = bytes.fromhex(option_values(argv, "--seed")[0])
    client_seeds = [bytes.fromhex(text) for text in option_values(argv, "--client-seed")]
    steps = document_block("steps")
    assert steps == example_steps(seed, client_seeds)
    # The prose after the block: the traced j values are the tail of the deal, reversed.
    draws = [int(value) for value in re.findall(r"-> j=(\d+)", steps)]
    deal = json.loads(document_block("output"))["deal"]
    assert deal[-len(draws) :] == draws[::-1]


def load_standalone() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(document_block("standalone"), str(DOCUMENT), "exec"), namespace)
    return namespace


def test_standalone_verifier_reproduces_the_example() -> None:
    standalone = load_standalone()
    argv = example_argv()
    seed = bytes.fromhex(option_values(argv, "--seed")[0])
    client_seeds = [bytes.fromhex(text) for text in option_values(argv, "--client-seed")]
    deck_size = int(option_values(argv, "--deck-size")[0])
    assert standalone["commitment"](seed) == option_values(argv, "--commitment")[0]
    mixed = standalone["mixed_seed"](seed, client_seeds)
    expected = verify_round(
        commitment(seed), seed.hex(), [c.hex() for c in client_seeds], "raiz-rng/1", deck_size
    )
    assert mixed.hex() == expected.mixed_seed
    assert tuple(standalone["permutation"](standalone["stream"](mixed, "deal"), deck_size)) == (
        expected.deal
    )


@settings(max_examples=50, deadline=None)
@given(
    seed=st.binary(min_size=32, max_size=32),
    client_seeds=st.lists(st.binary(min_size=1, max_size=64), max_size=16),
    label=st.text(
        alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=64
    ),
    size=st.integers(min_value=1, max_value=200),
)
def test_standalone_verifier_agrees_with_the_package(
    seed: bytes, client_seeds: list[bytes], label: str, size: int
) -> None:
    standalone = load_standalone()
    assert standalone["commitment"](seed) == commitment(seed)
    mixed = standalone["mixed_seed"](seed, client_seeds)
    assert mixed == mix_client_seeds(seed, client_seeds)
    ours = derive_stream(seed, label, client_seeds)
    theirs = standalone["stream"](mixed, label)
    assert standalone["permutation"](theirs, size) == ours.permutation(size)
    assert standalone["randbelow"](theirs, 2**61 - 1) == ours.randbelow(2**61 - 1)


def test_document_states_the_real_prefixes() -> None:
    text = DOCUMENT.read_text("utf-8")
    for prefix in (b"commit", b"mix", b"nonce", b"stream"):
        assert (b"raiz-rng/1\x00" + prefix + b"\x00").hex() in text


@pytest.mark.parametrize("size", [1, 2, 52, 300])
def test_standalone_stream_is_plain_hmac_drbg_read_in_blocks(size: int) -> None:
    standalone = load_standalone()
    assert standalone["BLOCK_BYTES"] == version_1.STREAM_BLOCK_BYTES
    entropy, nonce = hashlib.sha256(b"e").digest(), bytes(16)
    ours = BlockStream(HmacDrbg(entropy, nonce, b"p"), version_1.STREAM_BLOCK_BYTES)
    theirs = standalone["Stream"](standalone["HmacDrbg"](entropy, nonce, b"p"))
    assert permutation(ours, size) == standalone["permutation"](theirs, size)
    assert ours.generate(700) == theirs.read(700)


def test_the_one_line_formulas_state_the_real_constants() -> None:
    formulas = version_1.FORMULAS
    assert f"Generate({version_1.STREAM_BLOCK_BYTES})" in formulas["stream"]
    assert f"0 <= m <= {version_1.MAX_CLIENT_SEEDS}" in formulas["client_seed_mixing"]
    assert (
        f"{version_1.MIN_CLIENT_SEED_LENGTH_BYTES}..{version_1.MAX_CLIENT_SEED_LENGTH_BYTES} bytes"
        in formulas["client_seed_mixing"]
    )
    assert f"[0:{version_1.NONCE_LENGTH_BYTES}]" in formulas["stream"]
    for prefix in ("commit", "mix", "nonce", "stream"):
        assert f'"{prefix}"' in " ".join(formulas.values())
