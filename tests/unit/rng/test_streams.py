"""Seeds, commitments, client-seed mixing and labelled streams."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

import pytest

from rng import version_1
from rng.algorithms import ALGORITHMS, UnknownVersionError, get_algorithm
from rng.drbg import HmacDrbg
from rng.errors import RngError
from rng.fixed import FixedChance
from rng.streams import (
    ALGORITHM_VERSION,
    Chance,
    RandomStream,
    commitment,
    derive_stream,
    mix_client_seeds,
    new_round_seed,
)

SEED = bytes.fromhex("7f" * 16 + "a5" * 16)
OTHER_SEED = bytes.fromhex("7f" * 16 + "a5" * 15 + "a4")
TAG = b"raiz-rng/1\x00"


def test_version_tag() -> None:
    assert ALGORITHM_VERSION == "raiz-rng/1"
    assert set(ALGORITHMS) == {"raiz-rng/1"}


def test_new_round_seeds_are_32_fresh_bytes() -> None:
    seeds = {new_round_seed() for _ in range(64)}
    assert len(seeds) == 64
    assert {len(seed) for seed in seeds} == {32}


# --- commitment ---------------------------------------------------------------------------


def test_commitment_formula() -> None:
    expected = hashlib.sha256(TAG + b"commit\x00" + SEED).hexdigest()
    assert commitment(SEED) == expected
    assert commitment(SEED, "raiz-rng/1") == expected
    assert len(expected) == 64
    assert expected == expected.lower()


def test_commitment_is_domain_separated() -> None:
    value = commitment(SEED)
    assert value != hashlib.sha256(SEED).hexdigest()
    assert value != hashlib.sha256(b"raiz-rng/2\x00commit\x00" + SEED).hexdigest()
    assert value != hashlib.sha256(TAG + b"nonce\x00" + SEED).hexdigest()
    # The commitment never reveals the mixed seed, which is keyed by the seed itself.
    assert bytes.fromhex(value) != mix_client_seeds(SEED, [])
    assert commitment(OTHER_SEED) != value


@pytest.mark.parametrize("seed", [b"", bytes(31), bytes(33), bytearray(32), "00" * 32, None])
def test_seed_must_be_exactly_32_bytes(seed: object) -> None:
    with pytest.raises(RngError, match="seed must be"):
        commitment(seed)  # type: ignore[arg-type]
    with pytest.raises(RngError, match="seed must be"):
        derive_stream(seed, "deal")  # type: ignore[arg-type]


# --- client-seed mixing -------------------------------------------------------------------


def reference_mix(seed: bytes, client_seeds: Sequence[bytes]) -> bytes:
    message = TAG + b"mix\x00" + bytes([len(client_seeds)])
    for client_seed in client_seeds:
        message += bytes([len(client_seed)]) + client_seed
    return hmac.new(seed, message, hashlib.sha256).digest()


@pytest.mark.parametrize(
    "client_seeds",
    [[], [b"\x00"], [b"alice", b"bob"], [b"x" * 64] * 16],
)
def test_mix_formula(client_seeds: list[bytes]) -> None:
    assert mix_client_seeds(SEED, client_seeds) == reference_mix(SEED, client_seeds)
    assert mix_client_seeds(SEED, tuple(client_seeds)) == reference_mix(SEED, client_seeds)


def test_mix_depends_on_order_boundaries_and_count() -> None:
    variants = [
        [],
        [b"ab", b"c"],
        [b"a", b"bc"],
        [b"abc"],
        [b"c", b"ab"],
        [b"ab", b"c", b"\x00"],
    ]
    mixed = {mix_client_seeds(SEED, variant) for variant in variants}
    assert len(mixed) == len(variants)
    assert mix_client_seeds(SEED, []) != mix_client_seeds(OTHER_SEED, [])


@pytest.mark.parametrize(
    ("client_seeds", "message"),
    [
        ([b""], "client seed 0 must be 1..64 bytes"),
        ([b"ok", b"y" * 65], "client seed 1 must be 1..64 bytes"),
        ([b"z"] * 17, "at most 16 client seeds"),
        (["text"], "client seed 0 must be bytes"),
        ([bytearray(b"x")], "client seed 0 must be bytes"),
        (b"bytes-not-a-list", "sequence of bytes"),
        ("str-not-a-list", "sequence of bytes"),
        ({b"set"}, "sequence of bytes"),
    ],
)
def test_client_seed_rules(client_seeds: object, message: str) -> None:
    with pytest.raises(RngError, match=message):
        mix_client_seeds(SEED, client_seeds)  # type: ignore[arg-type]
    with pytest.raises(RngError, match=message):
        derive_stream(SEED, "deal", client_seeds)  # type: ignore[arg-type]


def test_single_client_seed_check_for_submissions() -> None:
    algorithm = get_algorithm("raiz-rng/1")
    assert algorithm.check_client_seed(b"x" * 64) == b"x" * 64
    assert algorithm.max_client_seeds == 16
    for bad in (b"", b"x" * 65, "text"):
        with pytest.raises(RngError, match="client seed 0 must be"):
            algorithm.check_client_seed(bad)  # type: ignore[arg-type]


# --- stream derivation --------------------------------------------------------------------


def test_stream_is_the_documented_drbg() -> None:
    client_seeds = [b"alice", b"bob"]
    mixed = reference_mix(SEED, client_seeds)
    nonce = hashlib.sha256(TAG + b"nonce\x00" + b"reshuffle/2").digest()[:16]
    drbg = HmacDrbg(mixed, nonce, TAG + b"stream\x00" + b"reshuffle/2")
    stream = derive_stream(SEED, "reshuffle/2", client_seeds)
    # The stream is the DRBG's Generate(256) outputs, concatenated, read front to back.
    expected = b"".join(drbg.generate(256) for _ in range(3))
    assert stream.random_bytes(100) + stream.random_bytes(500) == expected[:600]


def test_same_inputs_give_the_same_stream() -> None:
    first = derive_stream(SEED, "deal", [b"alice"])
    second = derive_stream(SEED, "deal", [b"alice"], "raiz-rng/1")
    assert first.permutation(104) == second.permutation(104)
    assert first.randbelow(4) == second.randbelow(4)
    assert first.random_bytes(64) == second.random_bytes(64)


def test_any_stream_can_be_rederived_alone() -> None:
    streams = {
        label: derive_stream(SEED, label) for label in ("deal", "reshuffle/1", "reshuffle/2")
    }
    consumed = [streams[label].permutation(52) for label in ("deal", "reshuffle/1", "reshuffle/2")]
    assert derive_stream(SEED, "reshuffle/2").permutation(52) == consumed[2]


def first_bytes(seed: bytes, label: str, client_seeds: Sequence[bytes] = ()) -> bytes:
    return derive_stream(seed, label, client_seeds).random_bytes(32)


def test_different_inputs_give_different_streams() -> None:
    labels = ["deal", "first_dealer"] + [f"reshuffle/{index}" for index in range(1, 200)]
    outputs = {first_bytes(SEED, label) for label in labels}
    outputs |= {first_bytes(OTHER_SEED, label) for label in labels}
    outputs |= {first_bytes(SEED, label, [b"alice"]) for label in labels}
    outputs |= {first_bytes(SEED, label, [b"alice", b"bob"]) for label in labels}
    assert len(outputs) == 4 * len(labels)
    decks = {tuple(derive_stream(SEED, label).permutation(104)) for label in labels}
    assert len(decks) == len(labels)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ((SEED, "deal", ()), (SEED, "first_dealer", ())),
        ((SEED, "reshuffle/1", ()), (SEED, "reshuffle/2", ())),
        ((SEED, "deal", ()), (OTHER_SEED, "deal", ())),
        ((SEED, "deal", ()), (SEED, "deal", (b"alice",))),
        ((SEED, "deal", (b"alice", b"bob")), (SEED, "deal", (b"bob", b"alice"))),
    ],
)
def test_streams_are_uncorrelated(
    left: tuple[bytes, str, tuple[bytes, ...]], right: tuple[bytes, str, tuple[bytes, ...]]
) -> None:
    size_bytes = 1 << 14
    left_stream = derive_stream(left[0], left[1], left[2])
    right_stream = derive_stream(right[0], right[1], right[2])
    a = b"".join(left_stream.random_bytes(4096) for _ in range(size_bytes // 4096))
    b = b"".join(right_stream.random_bytes(4096) for _ in range(size_bytes // 4096))
    # Matching bits: Binomial(n, 1/2), so within 5 standard deviations of n / 2.
    bit_count = 8 * size_bytes
    matching = (
        bit_count - int.from_bytes(bytes(x ^ y for x, y in zip(a, b, strict=True))).bit_count()
    )
    assert abs(matching - bit_count / 2) < 5 * (bit_count / 4) ** 0.5
    # Pearson correlation of the byte values: about N(0, 1/n) if independent.
    mean_a = sum(a) / size_bytes
    mean_b = sum(b) / size_bytes
    covariance = sum((x - mean_a) * (y - mean_b) for x, y in zip(a, b, strict=True))
    spread_a = sum((x - mean_a) ** 2 for x in a) ** 0.5
    spread_b = sum((y - mean_b) ** 2 for y in b) ** 0.5
    assert abs(covariance / (spread_a * spread_b)) < 5 / size_bytes**0.5
    # Equal bytes at the same offset: about n / 256.
    equal = sum(x == y for x, y in zip(a, b, strict=True))
    assert abs(equal - size_bytes / 256) < 5 * (size_bytes / 256) ** 0.5


@pytest.mark.parametrize(
    "label",
    ["", " deal", "deal ", "de al", "deal\n", "deal\x00", "baralho/ação", "x" * 65, None, b"deal"],
)
def test_label_rules(label: object) -> None:
    with pytest.raises(RngError, match="label must be"):
        derive_stream(SEED, label)  # type: ignore[arg-type]


def test_any_visible_ascii_label_up_to_64_characters_is_allowed() -> None:
    for label in ("!", "~" * 64, "first_dealer", "reshuffle/12", "Team-A.bonus:3"):
        assert derive_stream(SEED, label).label == label


def test_unknown_version_is_refused_everywhere() -> None:
    for call in (
        lambda: commitment(SEED, "raiz-rng/0"),
        lambda: mix_client_seeds(SEED, [], "raiz-rng/0"),
        lambda: derive_stream(SEED, "deal", (), "raiz-rng/0"),
        lambda: new_round_seed("raiz-rng/0"),
        lambda: commitment(SEED, None),  # type: ignore[arg-type]
        lambda: get_algorithm(["raiz-rng/1"]),  # type: ignore[arg-type]  # unhashable
    ):
        with pytest.raises(UnknownVersionError, match="unknown RNG algorithm version"):
            call()


def test_stream_properties_and_repr_hide_the_seed() -> None:
    stream = derive_stream(SEED, "deal")
    assert isinstance(stream, RandomStream)
    assert (stream.label, stream.version) == ("deal", "raiz-rng/1")
    assert repr(stream) == "RandomStream(version='raiz-rng/1', label='deal')"


def test_random_bytes_respects_the_read_limit() -> None:
    stream = derive_stream(SEED, "deal")
    assert len(stream.random_bytes(65536)) == 65536
    with pytest.raises(RngError, match=r"n_bytes must be in 0\.\.65536"):
        stream.random_bytes(65537)


@pytest.mark.parametrize("length", [31, 33, 64])
def test_a_stream_derives_from_a_32_byte_mixed_seed_only(length: int) -> None:
    # The DRBG alone would take any entropy of 32 bytes or more.
    with pytest.raises(RngError, match="exactly 32 bytes"):
        version_1.stream_bytes(bytes(length), "deal")


# --- FixedChance --------------------------------------------------------------------------


def deal_with(chance: Chance, deck_size: int) -> list[int]:
    return chance.permutation(deck_size)


def test_fixed_chance_replays_its_script() -> None:
    chance = FixedChance(permutations=[[2, 0, 1]], draws=[3, 0], byte_strings=[b"\x01\x02"])
    assert not chance.is_exhausted
    assert deal_with(chance, 3) == [2, 0, 1]
    assert chance.randbelow(4) == 3
    assert chance.randbelow(1) == 0
    assert not chance.is_exhausted  # the byte string is left
    assert chance.random_bytes(2) == b"\x01\x02"
    assert chance.is_exhausted
    assert repr(chance) == "FixedChance(permutations_left=0, draws_left=0, byte_strings_left=0)"


@pytest.mark.parametrize(
    ("chance", "call", "message"),
    [
        (FixedChance(), lambda c: c.permutation(3), "no scripted permutation"),
        (FixedChance(), lambda c: c.randbelow(3), "no scripted draw"),
        (FixedChance(), lambda c: c.random_bytes(3), "no scripted byte string"),
        (FixedChance(permutations=[[0, 1, 1]]), lambda c: c.permutation(3), "not a permutation"),
        (FixedChance(permutations=[[0, 1]]), lambda c: c.permutation(3), "not a permutation"),
        (FixedChance(draws=[4]), lambda c: c.randbelow(4), r"not in \[0, 4\)"),
        (FixedChance(draws=[-1]), lambda c: c.randbelow(4), r"not in \[0, 4\)"),
        (FixedChance(byte_strings=[b"x"]), lambda c: c.random_bytes(2), "has 1 bytes"),
    ],
)
def test_fixed_chance_refuses_scripts_that_do_not_fit(
    chance: FixedChance, call: object, message: str
) -> None:
    with pytest.raises(RngError, match=message):
        call(chance)  # type: ignore[operator]
