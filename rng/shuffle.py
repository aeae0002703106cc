"""Uniform integers and Fisher-Yates permutations from a deterministic byte source.

The algorithm is part of the public verification contract, so it is specified here bit for bit.
An independent implementation that follows these rules reproduces every draw exactly.

A *byte source* hands out the next bytes of a deterministic byte string, in order
(:class:`ByteSource`). In ``raiz-rng/1`` every stream is a :class:`BlockStream`: the
concatenation of successive ``Generate(block_bytes)`` outputs of its HMAC_DRBG, read front to
back, so how the bytes are grouped into reads never changes which bytes come next.

``randbelow(source, n)`` returns a uniform integer in ``[0, n)``:

1. ``n`` must be an ``int`` with ``1 <= n <= MAX_RANDBELOW_BOUND`` (2**256).
2. ``k = (n - 1).bit_length()``, the number of bits needed for ``n - 1``. If ``k == 0``
   (that is ``n == 1``) the result is ``0`` and **no bytes are read**.
3. ``w = ceil(k / 8)`` bytes; ``mask = 2**k - 1``.
4. Loop: take the **next** ``w`` bytes of the source, read them as an unsigned **big-endian**
   integer, keep the low ``k`` bits (``value & mask``, which clears the surplus high bits of the
   first byte). If that ``candidate < n``, return it; otherwise discard it and repeat step 4
   (rejection sampling: no modulo reduction, no floating point, so every result has probability
   exactly ``1/n``).

Because ``2**(k-1) < n <= 2**k``, each attempt succeeds with probability greater than 1/2.
A power of two ``n = 2**k`` never rejects; ``n = 2**k + 1`` rejects almost half the time.

``permutation(source, n)`` is the Durstenfeld form of Fisher-Yates:

1. ``items = [0, 1, ..., n - 1]``.
2. For ``i`` from ``n - 1`` **down to** ``1``: ``j = randbelow(source, i + 1)``, then swap
   ``items[i]`` and ``items[j]`` (``j == i`` leaves the list unchanged but still consumed its
   draw).
3. Return ``items``. ``items[p]`` is the original index that ends at position ``p``.

A deck of ``n`` cards therefore makes exactly ``n - 1`` ``randbelow`` calls, with bounds
``n, n - 1, ..., 2`` in that order.
"""

from __future__ import annotations

from typing import Final, Protocol

from rng.errors import RngError

__all__ = (
    "MAX_BLOCK_BYTES",
    "MAX_PERMUTATION_SIZE",
    "MAX_RANDBELOW_BOUND",
    "MAX_READ_BYTES",
    "BlockStream",
    "ByteSource",
    "permutation",
    "randbelow",
)

MAX_RANDBELOW_BOUND: Final = 2**256
"""The largest ``n`` accepted by :func:`randbelow`: a candidate never exceeds 32 bytes."""
MAX_PERMUTATION_SIZE: Final = 2**16
"""The largest permutation built in one call; a card deck is a few hundred at most."""
MAX_READ_BYTES: Final = 2**16
"""The most bytes one :meth:`BlockStream.generate` call returns."""
MAX_BLOCK_BYTES: Final = 2**16
"""The largest block a :class:`BlockStream` requests: one SP 800-90A Generate request at most."""

_BYTE_BITS: Final = 8


class ByteSource(Protocol):
    """Anything that returns the next bytes of a deterministic byte string.

    A :class:`BlockStream` (what ``raiz-rng/1`` streams are) or, in tests, a bare
    :class:`rng.drbg.HmacDrbg`, whose every call is one Generate request.
    """

    def generate(self, n_bytes: int) -> bytes:
        """Return exactly the next ``n_bytes`` bytes."""
        ...


class BlockStream:
    """A generator read as one continuous byte stream, in fixed-size blocks.

    The stream is ``generator.generate(block_bytes) || generator.generate(block_bytes) || ...``;
    :meth:`generate` hands out its next bytes, front to back. A read may span two or more
    blocks; no byte is skipped or used twice. Drawing a whole deck from one block instead of one
    Generate request per draw is what makes shuffling fast.
    """

    __slots__ = ("_block_bytes", "_buffer", "_generator", "_offset")

    def __init__(self, generator: ByteSource, block_bytes: int) -> None:
        self._generator = generator
        self._block_bytes = _check_int("block_bytes", block_bytes, 1, MAX_BLOCK_BYTES)
        self._buffer = b""
        """The current block (or the tail of a read that spanned blocks)."""
        self._offset = 0
        """How many bytes of ``_buffer`` have been handed out."""

    def __repr__(self) -> str:
        # The buffered bytes are secret until the round is revealed: never show them.
        return f"BlockStream(block_bytes={self._block_bytes})"

    @property
    def block_bytes(self) -> int:
        """The size of each request made to the generator."""
        return self._block_bytes

    def generate(self, n_bytes: int) -> bytes:
        """The next ``n_bytes`` bytes of the stream (0..:data:`MAX_READ_BYTES`)."""
        _check_int("n_bytes", n_bytes, 0, MAX_READ_BYTES)
        start = self._offset
        end = start + n_bytes
        if end <= len(self._buffer):
            self._offset = end
            return self._buffer[start:end]
        pending = self._buffer[start:]
        while len(pending) < n_bytes:
            pending += self._next_block()
        self._buffer = pending
        self._offset = n_bytes
        return pending[:n_bytes]

    def _next_block(self) -> bytes:
        block = self._generator.generate(self._block_bytes)
        if len(block) != self._block_bytes:
            msg = f"generator returned {len(block)} bytes, {self._block_bytes} were requested"
            raise RngError(msg)
        return block


def _check_int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an int, not {type(value).__name__}"
        raise RngError(msg)
    if not low <= value <= high:
        msg = f"{name} must be in {low}..{high}, got {value}"
        raise RngError(msg)
    return value


def _draw_below(source: ByteSource, n: int) -> int:
    # The unchecked core of randbelow: permutation() calls it with bounds it knows to be valid,
    # so it skips the argument checks.
    bit_count = (n - 1).bit_length()
    if bit_count == 0:
        return 0
    width_bytes = (bit_count + 7) // 8
    mask = (1 << bit_count) - 1
    while True:
        chunk = source.generate(width_bytes)
        if len(chunk) != width_bytes:
            msg = f"byte source returned {len(chunk)} bytes, {width_bytes} were requested"
            raise RngError(msg)
        candidate = int.from_bytes(chunk, "big") & mask
        if candidate < n:
            return candidate


def randbelow(drbg: ByteSource, n: int) -> int:
    """Return a uniform integer in ``[0, n)``, by the rejection rule in the module docstring."""
    _check_int("n", n, 1, MAX_RANDBELOW_BOUND)
    return _draw_below(drbg, n)


def permutation(drbg: ByteSource, n: int) -> list[int]:
    """Return a uniform permutation of ``range(n)`` (Fisher-Yates, from the top down)."""
    _check_int("n", n, 1, MAX_PERMUTATION_SIZE)
    items = list(range(n))
    if type(drbg) is BlockStream:
        _shuffle_from_block_stream(drbg, items)
        return items
    for index in range(n - 1, 0, -1):
        other = _draw_below(drbg, index + 1)
        items[index], items[other] = items[other], items[index]
    return items


def _shuffle_from_block_stream(stream: BlockStream, items: list[int]) -> None:
    """Fisher-Yates on ``items`` in place, exactly as :func:`permutation`, only faster.

    Single-byte draws (bounds up to 256, every draw of a card deck) read the stream's buffer
    directly instead of making one method call and one ``bytes`` object per attempt; wider
    draws go through :func:`_draw_below`. The bytes consumed, and so the result, are identical
    (``tests/unit/rng/test_shuffle.py`` compares both paths).
    """
    buffer = stream._buffer
    offset = stream._offset
    end = len(buffer)
    for index in range(len(items) - 1, 0, -1):
        bit_count = index.bit_length()  # (bound - 1).bit_length() with bound = index + 1
        if bit_count > _BYTE_BITS:
            stream._buffer, stream._offset = buffer, offset
            other = _draw_below(stream, index + 1)
            buffer, offset = stream._buffer, stream._offset
            end = len(buffer)
        else:
            mask = (1 << bit_count) - 1
            while True:
                if offset == end:
                    buffer = stream._next_block()
                    offset = 0
                    end = len(buffer)
                other = buffer[offset] & mask
                offset += 1
                if other <= index:
                    break
        items[index], items[other] = items[other], items[index]
    stream._buffer, stream._offset = buffer, offset
