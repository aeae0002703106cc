"""Algorithm ``raiz-rng/1``: the formulas behind commitments, client-seed mixing and streams.

Everything here is frozen: rounds recorded under ``raiz-rng/1`` are verified with these exact
functions forever. A change to any formula, to the DRBG or to the shuffle in :mod:`rng.shuffle`
needs a new module and a new version tag in :mod:`rng.algorithms`, never an edit here.

Notation: ``||`` is byte concatenation, ``T = b"raiz-rng/1"`` (ASCII), ``u8(x)`` one unsigned byte.

* **Commitment** (published before the deal):
  ``commitment = hex(SHA-256(T || 0x00 || b"commit" || 0x00 || seed))``, 64 lowercase hex digits.
  ``seed`` is exactly 32 bytes, so the preimage is unambiguous.
* **Client-seed mixing**: with client seeds ``c_1 .. c_m`` in the order given (``0 <= m <= 16``,
  each 1..64 bytes), ``mixed = HMAC-SHA-256(key=seed,
  msg=T || 0x00 || b"mix" || 0x00 || u8(m) || u8(len(c_1)) || c_1 || ... || u8(len(c_m)) || c_m)``.
  The mix always runs, also with no client seeds. Order matters and is part of the input.
* **Stream** for a label ``L`` (1..64 visible ASCII characters ``!``..``~``, encoded as ASCII):
  its generator is ``drbg = HmacDrbg(entropy_input=mixed,
  nonce=SHA-256(T || 0x00 || b"nonce" || 0x00 || L)[:16],
  personalization=T || 0x00 || b"stream" || 0x00 || L)``, and the stream is the byte string
  ``drbg.generate(256) || drbg.generate(256) || ...`` (:data:`STREAM_BLOCK_BYTES`), read front
  to back (:class:`rng.shuffle.BlockStream`). Draws take the next bytes of it with
  :func:`rng.shuffle.randbelow` and :func:`rng.shuffle.permutation`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

from cryptography.hazmat.primitives import hashes, hmac

from rng.drbg import HmacDrbg
from rng.errors import RngError
from rng.shuffle import BlockStream

__all__ = (
    "FORMULAS",
    "MAX_CLIENT_SEEDS",
    "MAX_CLIENT_SEED_LENGTH_BYTES",
    "MAX_LABEL_LENGTH",
    "MIN_CLIENT_SEED_LENGTH_BYTES",
    "NONCE_LENGTH_BYTES",
    "SEED_LENGTH_BYTES",
    "STREAM_BLOCK_BYTES",
    "VERSION",
    "check_client_seed",
    "check_label",
    "check_seed",
    "commitment",
    "mix_client_seeds",
    "stream_bytes",
    "stream_drbg",
    "stream_nonce",
    "stream_personalization",
)

VERSION: Final = "raiz-rng/1"
"""The version tag, stored with every round and used as the domain-separation prefix."""
SEED_LENGTH_BYTES: Final = 32
"""A round seed is exactly 32 bytes (256 bits, the DRBG's security strength)."""
MIN_CLIENT_SEED_LENGTH_BYTES: Final = 1
"""The shortest client seed accepted."""
MAX_CLIENT_SEED_LENGTH_BYTES: Final = 64
"""The longest client seed accepted; its length must fit the one-byte length prefix."""
MAX_CLIENT_SEEDS: Final = 16
"""The most client seeds one round mixes in; the count must fit the one-byte count prefix."""
MAX_LABEL_LENGTH: Final = 64
"""The longest stream label, in characters (each one byte of ASCII)."""
NONCE_LENGTH_BYTES: Final = 16
"""The stream nonce: SHA-256 truncated to 128 bits, the DRBG's minimum nonce length."""
STREAM_BLOCK_BYTES: Final = 256
"""Every Generate request of a stream asks for exactly this many bytes (eight HMAC blocks).

A 104-card shuffle reads about 146 bytes, so one request almost always covers a whole deck.
"""

FORMULAS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "notation": '|| is concatenation, u8(x) one unsigned byte, T = "raiz-rng/1" (ASCII)',
        "commitment": 'hex(SHA-256(T || 0x00 || "commit" || 0x00 || seed)), seed 32 bytes',
        "client_seed_mixing": (
            'mixed = HMAC-SHA-256(key = seed, T || 0x00 || "mix" || 0x00 || u8(m) || '
            "u8(len(c_1)) || c_1 || ... || u8(len(c_m)) || c_m), 0 <= m <= 16 client seeds "
            "of 1..64 bytes each, in the published order"
        ),
        "stream": (
            "drbg = HMAC_DRBG-SHA-256 (SP 800-90A) with entropy = mixed, "
            'nonce = SHA-256(T || 0x00 || "nonce" || 0x00 || L)[0:16], '
            'personalization = T || 0x00 || "stream" || 0x00 || L for the ASCII label L; '
            "stream = drbg.Generate(256) || drbg.Generate(256) || ..., read front to back"
        ),
        "randbelow": (
            "k = bit_length(n - 1), w = ceil(k / 8); repeat x = big-endian(next w bytes) "
            "AND (2^k - 1) until x < n; n = 1 reads nothing and gives 0"
        ),
        "permutation": (
            "items = [0, ..., n - 1]; for i = n - 1 down to 1: j = randbelow(i + 1), "
            "swap items[i] and items[j]"
        ),
        "labels": (
            '"deal": one permutation(deck size); "first_dealer": one randbelow(players); '
            '"reshuffle/k": one permutation(size) for the k-th reshuffle'
        ),
    }
)
"""Each formula in one line, for the public algorithm listing; ``docs/rng.md`` is normative."""

_TAG: Final = VERSION.encode("ascii") + b"\x00"
_COMMIT_PREFIX: Final = _TAG + b"commit\x00"
_MIX_PREFIX: Final = _TAG + b"mix\x00"
_NONCE_PREFIX: Final = _TAG + b"nonce\x00"
_STREAM_PREFIX: Final = _TAG + b"stream\x00"
_LOWEST_LABEL_CHARACTER: Final = "!"
_HIGHEST_LABEL_CHARACTER: Final = "~"


def check_seed(seed: object) -> bytes:
    """Return ``seed`` if it is exactly :data:`SEED_LENGTH_BYTES` bytes, else raise."""
    if not isinstance(seed, bytes):
        msg = f"seed must be bytes, not {type(seed).__name__}"
        raise RngError(msg)
    if len(seed) != SEED_LENGTH_BYTES:
        msg = f"seed must be exactly {SEED_LENGTH_BYTES} bytes, got {len(seed)}"
        raise RngError(msg)
    return seed


def check_label(label: object) -> bytes:
    """Return the ASCII bytes of a valid stream label, else raise."""
    if not isinstance(label, str):
        msg = f"label must be a str, not {type(label).__name__}"
        raise RngError(msg)
    if not 1 <= len(label) <= MAX_LABEL_LENGTH or not all(
        _LOWEST_LABEL_CHARACTER <= character <= _HIGHEST_LABEL_CHARACTER for character in label
    ):
        msg = (
            f"label must be 1..{MAX_LABEL_LENGTH} visible ASCII characters "
            f"({_LOWEST_LABEL_CHARACTER!r}..{_HIGHEST_LABEL_CHARACTER!r}), got {label!r}"
        )
        raise RngError(msg)
    return label.encode("ascii")


def check_client_seed(client_seed: object, position: int = 0) -> bytes:
    """Return ``client_seed`` if it is bytes of an allowed length, else raise.

    ``position`` only names the seed in the error message.
    """
    if not isinstance(client_seed, bytes):
        msg = f"client seed {position} must be bytes, not {type(client_seed).__name__}"
        raise RngError(msg)
    if not MIN_CLIENT_SEED_LENGTH_BYTES <= len(client_seed) <= MAX_CLIENT_SEED_LENGTH_BYTES:
        msg = (
            f"client seed {position} must be {MIN_CLIENT_SEED_LENGTH_BYTES}.."
            f"{MAX_CLIENT_SEED_LENGTH_BYTES} bytes, got {len(client_seed)}"
        )
        raise RngError(msg)
    return client_seed


def _check_client_seeds(client_seeds: object) -> Sequence[bytes]:
    if isinstance(client_seeds, bytes | str) or not isinstance(client_seeds, Sequence):
        msg = "client_seeds must be a sequence of bytes values"
        raise RngError(msg)
    if len(client_seeds) > MAX_CLIENT_SEEDS:
        msg = f"at most {MAX_CLIENT_SEEDS} client seeds, got {len(client_seeds)}"
        raise RngError(msg)
    for position, client_seed in enumerate(client_seeds):
        check_client_seed(client_seed, position)
    return client_seeds


def commitment(seed: bytes) -> str:
    """``hex(SHA-256(T || 0x00 || b"commit" || 0x00 || seed))``."""
    return hashlib.sha256(_COMMIT_PREFIX + check_seed(seed)).hexdigest()


def mix_client_seeds(seed: bytes, client_seeds: Sequence[bytes]) -> bytes:
    """``HMAC-SHA-256(seed, T || 0x00 || b"mix" || 0x00 || u8(m) || (u8(len(c)) || c)...)``."""
    check_seed(seed)
    client_seeds = _check_client_seeds(client_seeds)
    message = bytearray(_MIX_PREFIX)
    message.append(len(client_seeds))
    for client_seed in client_seeds:
        message.append(len(client_seed))
        message += client_seed
    mac = hmac.HMAC(seed, hashes.SHA256())
    mac.update(bytes(message))
    return mac.finalize()


def stream_nonce(label: str) -> bytes:
    """``SHA-256(T || 0x00 || b"nonce" || 0x00 || L)[:16]``."""
    return hashlib.sha256(_NONCE_PREFIX + check_label(label)).digest()[:NONCE_LENGTH_BYTES]


def stream_personalization(label: str) -> bytes:
    """``T || 0x00 || b"stream" || 0x00 || L``."""
    return _STREAM_PREFIX + check_label(label)


def stream_drbg(mixed_seed: bytes, label: str) -> HmacDrbg:
    """The HMAC_DRBG of one labelled stream, instantiated from the mixed seed."""
    check_seed(mixed_seed)
    return HmacDrbg(mixed_seed, stream_nonce(label), stream_personalization(label))


def stream_bytes(mixed_seed: bytes, label: str) -> BlockStream:
    """The bytes of one labelled stream: its DRBG read in :data:`STREAM_BLOCK_BYTES` blocks."""
    return BlockStream(stream_drbg(mixed_seed, label), STREAM_BLOCK_BYTES)
