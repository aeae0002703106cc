"""randbelow, permutation and block streams: exact byte consumption, fast path, known answers."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rng import version_1
from rng.drbg import HmacDrbg
from rng.errors import RngError
from rng.shuffle import (
    MAX_PERMUTATION_SIZE,
    MAX_RANDBELOW_BOUND,
    BlockStream,
    ByteSource,
    permutation,
    randbelow,
)


class ScriptedSource:
    """A byte source that hands out pre-written chunks and records each request size."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = list(chunks)
        self.requests: list[int] = []

    def generate(self, n_bytes: int) -> bytes:
        self.requests.append(n_bytes)
        chunk = self.chunks.pop(0)
        assert len(chunk) == n_bytes, f"script wrote {len(chunk)} bytes, {n_bytes} requested"
        return chunk


def fresh_drbg(name: str) -> HmacDrbg:
    return HmacDrbg(hashlib.sha256(name.encode()).digest(), b"test-shuffle-nonce")


def test_n_one_reads_nothing() -> None:
    source = ScriptedSource([])
    assert randbelow(source, 1) == 0
    assert source.requests == []


@pytest.mark.parametrize(
    ("n", "chunks", "expected", "requests"),
    [
        # n = 2: one byte, mask 0x01, never rejects.
        (2, [b"\xfe"], 0, [1]),
        (2, [b"\xff"], 1, [1]),
        # n = 3: mask 0x03; 3 is rejected, then 0xfe & 3 = 2.
        (3, [b"\x03", b"\xfe"], 2, [1, 1]),
        # n = 2**8: one byte, no rejection.
        (256, [b"\xff"], 255, [1]),
        # n = 2**8 + 1: two bytes big-endian, mask 0x1ff; the high 7 bits of byte 0 are cleared.
        (257, [b"\xff\xff", b"\xff\x00"], 256, [2, 2]),
        (257, [b"\xfe\x01"], 1, [2]),
        # n = 2**32 - 1: four bytes, mask 0xffffffff; only 0xffffffff is rejected.
        (2**32 - 1, [b"\xff" * 4, b"\xff\xff\xff\xfe"], 2**32 - 2, [4, 4]),
        (2**32 - 1, [b"\x00\x00\x01\x00"], 256, [4]),
        # n = 2**32: four bytes, every value accepted.
        (2**32, [b"\xff" * 4], 2**32 - 1, [4]),
        # n = 2**32 + 1: five bytes, mask 0x1_ffff_ffff.
        (2**32 + 1, [b"\xff" * 5, b"\xfe\x00\x00\x00\x01"], 1, [5, 5]),
        (2**32 + 1, [b"\x81\x00\x00\x00\x00"], 2**32, [5]),
        # The largest bound: 32 bytes, one HMAC block, never rejects.
        (MAX_RANDBELOW_BOUND, [b"\xff" * 32], 2**256 - 1, [32]),
    ],
)
def test_exact_byte_consumption(
    n: int, chunks: list[bytes], expected: int, requests: list[int]
) -> None:
    source = ScriptedSource(chunks)
    assert randbelow(source, n) == expected
    assert source.requests == requests
    assert source.chunks == []


@pytest.mark.parametrize("k", [1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255])
def test_powers_of_two_and_one_more(k: int) -> None:
    width = (k + 7) // 8
    all_ones = b"\xff" * width
    # n = 2**k: k bits, the all-ones candidate 2**k - 1 is accepted on the first read.
    source = ScriptedSource([all_ones])
    assert randbelow(source, 2**k) == 2**k - 1
    assert source.requests == [width]
    # n = 2**k + 1: k + 1 bits; all ones is rejected, then exactly 2**k is accepted.
    wider = (k + 1 + 7) // 8
    source = ScriptedSource([b"\xff" * wider, (2**k).to_bytes(wider, "big")])
    assert randbelow(source, 2**k + 1) == 2**k
    assert source.requests == [wider, wider]


@pytest.mark.parametrize("n", [0, -1, MAX_RANDBELOW_BOUND + 1, True, 2.0, "3"])
def test_randbelow_rejects_bad_bounds(n: object) -> None:
    with pytest.raises(RngError, match="n must"):
        randbelow(ScriptedSource([]), n)  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [0, -3, MAX_PERMUTATION_SIZE + 1, False, 4.0])
def test_permutation_rejects_bad_sizes(n: object) -> None:
    with pytest.raises(RngError, match="n must"):
        permutation(ScriptedSource([]), n)  # type: ignore[arg-type]


def test_short_read_from_a_broken_source_is_an_error() -> None:
    class ShortSource:
        def generate(self, n_bytes: int) -> bytes:
            return b""

    with pytest.raises(RngError, match="returned 0 bytes"):
        randbelow(ShortSource(), 10)


def test_permutation_walks_from_the_top_down() -> None:
    # i = 2: randbelow(3) -> 1, swap items[2] and items[1]: [0, 2, 1]
    # i = 1: randbelow(2) -> 0, swap items[1] and items[0]: [2, 0, 1]
    source = ScriptedSource([b"\x01", b"\x00"])
    assert permutation(source, 3) == [2, 0, 1]
    assert source.requests == [1, 1]


def test_permutation_of_one_reads_nothing() -> None:
    source = ScriptedSource([])
    assert permutation(source, 1) == [0]
    assert source.requests == []


def reference_permutation(drbg: HmacDrbg, n: int) -> list[int]:
    """The documented algorithm, re-typed from ``docs/rng.md`` with no shared code."""

    def below(bound: int) -> int:
        bits = (bound - 1).bit_length()
        if bits == 0:
            return 0
        while True:
            value = int.from_bytes(drbg.generate((bits + 7) // 8), "big") % (1 << bits)
            if value < bound:
                return value

    deck = list(range(n))
    for i in reversed(range(1, n)):
        j = below(i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


@pytest.mark.parametrize("n", [1, 2, 3, 40, 52, 104, 300])
def test_permutation_matches_an_independent_reading_of_the_spec(n: int) -> None:
    assert permutation(fresh_drbg("spec"), n) == reference_permutation(fresh_drbg("spec"), n)


def test_known_answer() -> None:
    # Pinned output of the draw rule on a bare DRBG (one Generate request per read).
    assert permutation(fresh_drbg("known answer"), 10) == KNOWN_PERMUTATION_OF_10
    drbg = fresh_drbg("known answer")
    assert [randbelow(drbg, 1000) for _ in range(5)] == KNOWN_DRAWS_BELOW_1000


KNOWN_PERMUTATION_OF_10 = [9, 6, 4, 7, 1, 8, 0, 2, 5, 3]
KNOWN_DRAWS_BELOW_1000 = [943, 440, 705, 53, 367]


@given(seed=st.binary(min_size=32, max_size=32), n=st.integers(min_value=1, max_value=300))
def test_permutation_is_a_permutation(seed: bytes, n: int) -> None:
    result = permutation(HmacDrbg(seed, b"hypothesis-nonce"), n)
    assert sorted(result) == list(range(n))


@given(
    seed=st.binary(min_size=32, max_size=32),
    n=st.one_of(
        st.integers(min_value=1, max_value=1000),
        st.integers(min_value=1, max_value=MAX_RANDBELOW_BOUND),
    ),
)
def test_randbelow_is_in_range(seed: bytes, n: int) -> None:
    drbg = HmacDrbg(seed, b"hypothesis-nonce")
    for _ in range(5):
        assert 0 <= randbelow(drbg, n) < n


# --- block streams ------------------------------------------------------------------------


class CountingGenerator:
    """A generator whose output is a known byte string; records each request size."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0
        self.requests: list[int] = []

    def generate(self, n_bytes: int) -> bytes:
        self.requests.append(n_bytes)
        chunk = self.data[self.position : self.position + n_bytes]
        self.position += n_bytes
        return chunk


class Unbuffered:
    """Hides a BlockStream behind a plain ByteSource, forcing permutation's generic path."""

    def __init__(self, source: ByteSource) -> None:
        self.source = source

    def generate(self, n_bytes: int) -> bytes:
        return self.source.generate(n_bytes)


DATA = bytes(range(256)) * 8


@pytest.mark.parametrize("reads", [[1] * 20, [3, 5, 7, 11], [4, 4, 4], [9], [0, 2, 0, 10, 1]])
def test_block_stream_hands_out_the_concatenated_blocks_in_order(reads: list[int]) -> None:
    generator = CountingGenerator(DATA)
    stream = BlockStream(generator, 4)
    output = b"".join(stream.generate(n) for n in reads)
    assert output == DATA[: sum(reads)]
    # Only whole blocks are requested, and only as many as the reads needed.
    assert set(generator.requests) <= {4}
    assert len(generator.requests) == -(-sum(reads) // 4)


def test_block_stream_reads_may_span_several_blocks() -> None:
    generator = CountingGenerator(DATA)
    stream = BlockStream(generator, 3)
    assert stream.generate(2) == DATA[:2]
    assert stream.generate(10) == DATA[2:12]
    assert stream.generate(1) == DATA[12:13]
    assert generator.requests == [3, 3, 3, 3, 3]


def test_block_stream_checks_its_generator_and_arguments() -> None:
    with pytest.raises(RngError, match="generator returned 2 bytes, 4 were requested"):
        BlockStream(CountingGenerator(b"ab"), 4).generate(1)
    for bad_block in (0, 2**16 + 1, True, 1.5):
        with pytest.raises(RngError, match="block_bytes must"):
            BlockStream(CountingGenerator(DATA), bad_block)  # type: ignore[arg-type]
    stream = BlockStream(CountingGenerator(DATA), 4)
    for bad_size in (-1, 2**16 + 1, False, "3"):
        with pytest.raises(RngError, match="n_bytes must"):
            stream.generate(bad_size)  # type: ignore[arg-type]


def test_block_stream_repr_hides_the_buffered_bytes() -> None:
    stream = BlockStream(CountingGenerator(DATA), 256)
    stream.generate(1)
    assert repr(stream) == "BlockStream(block_bytes=256)"
    assert stream.block_bytes == 256


def version_1_stream(name: str) -> BlockStream:
    return version_1.stream_bytes(hashlib.sha256(name.encode()).digest(), "deal")


@settings(deadline=None)
@given(
    seed=st.binary(min_size=32, max_size=32),
    # Up to 256 every draw is one byte; above, the widest draws take two bytes.
    sizes=st.lists(st.one_of(st.integers(1, 300), st.integers(257, 3000)), min_size=1, max_size=3),
    block_bytes=st.sampled_from([1, 2, 3, 32, 256]),
)
def test_the_fast_path_draws_exactly_what_the_generic_path_draws(
    seed: bytes, sizes: list[int], block_bytes: int
) -> None:
    def source() -> BlockStream:
        return BlockStream(HmacDrbg(seed, b"fast-path-nonce!"), block_bytes)

    fast, generic = source(), source()
    for size in sizes:
        assert permutation(fast, size) == permutation(Unbuffered(generic), size)
        # Both leave the stream at the same place.
        assert randbelow(fast, 1000) == randbelow(generic, 1000)
    assert fast.generate(40) == generic.generate(40)


def test_the_largest_permutation_agrees_on_both_paths() -> None:
    fast = version_1_stream("largest")
    generic = Unbuffered(version_1_stream("largest"))
    assert permutation(fast, MAX_PERMUTATION_SIZE) == permutation(generic, MAX_PERMUTATION_SIZE)


def test_a_deck_usually_fits_in_one_block() -> None:
    generator = CountingGenerator(bytes([0x10]) * 4096)
    # Every byte accepted: a 104-card deck reads exactly 103 bytes, within one 256-byte block.
    permutation(BlockStream(generator, version_1.STREAM_BLOCK_BYTES), 104)
    assert generator.requests == [256]


def test_version_1_known_answer() -> None:
    # Pinned output of raiz-rng/1 streams: any change here changes every recorded round, so it
    # needs a new version tag.
    assert permutation(version_1_stream("known answer"), 10) == KNOWN_V1_PERMUTATION_OF_10
    stream = version_1_stream("known answer")
    assert [randbelow(stream, 1000) for _ in range(5)] == KNOWN_V1_DRAWS_BELOW_1000
    assert permutation(version_1_stream("known answer"), 104)[:8] == KNOWN_V1_DECK_HEAD


KNOWN_V1_PERMUTATION_OF_10 = [3, 6, 5, 0, 4, 2, 9, 7, 1, 8]
KNOWN_V1_DRAWS_BELOW_1000 = [11, 439, 370, 80, 675]
KNOWN_V1_DECK_HEAD = [54, 45, 50, 77, 86, 90, 31, 61]
