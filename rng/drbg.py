"""HMAC_DRBG with SHA-256, exactly as NIST SP 800-90A Rev. 1, section 10.1.2, specifies it.

The mechanism is deterministic: the same entropy input, nonce, personalization string and
sequence of calls always give the same bytes. That is the point here, because a shuffle must be
reproducible by anyone who later learns the seed. The implementation is checked against the NIST
CAVP known-answer vectors (``tests/data/HMAC_DRBG_SHA256_*.rsp``).

Prediction resistance is not offered: this DRBG has no entropy source of its own, every input
comes from the caller.
"""

from __future__ import annotations

from typing import Final

from cryptography.hazmat.primitives import hashes, hmac

from rng.errors import RngError

__all__ = (
    "MAX_ADDITIONAL_INPUT_LENGTH_BYTES",
    "MAX_BYTES_PER_REQUEST",
    "MAX_ENTROPY_INPUT_LENGTH_BYTES",
    "MAX_NONCE_LENGTH_BYTES",
    "MAX_PERSONALIZATION_STRING_LENGTH_BYTES",
    "MIN_ENTROPY_INPUT_LENGTH_BYTES",
    "MIN_NONCE_LENGTH_BYTES",
    "OUTPUT_BLOCK_LENGTH_BYTES",
    "RESEED_INTERVAL",
    "SECURITY_STRENGTH_BITS",
    "DrbgError",
    "HmacDrbg",
)

SECURITY_STRENGTH_BITS: Final = 256
"""The security strength this DRBG is instantiated at (the highest SHA-256 supports)."""
OUTPUT_BLOCK_LENGTH_BYTES: Final = 32
"""``outlen`` of SHA-256: the size of ``K``, ``V`` and of each HMAC output block."""
MIN_ENTROPY_INPUT_LENGTH_BYTES: Final = SECURITY_STRENGTH_BITS // 8
"""SP 800-90A Table 2 ``min_length``: the entropy input carries the full security strength."""
MAX_ENTROPY_INPUT_LENGTH_BYTES: Final = 2**35 // 8
"""SP 800-90A Table 2 ``max_length``: 2**35 bits."""
MIN_NONCE_LENGTH_BYTES: Final = SECURITY_STRENGTH_BITS // 16
"""SP 800-90A section 8.6.7: a nonce carries at least half the security strength."""
MAX_NONCE_LENGTH_BYTES: Final = 2**35 // 8
"""The nonce joins the seed material, so it shares the 2**35-bit ``max_length``."""
MAX_PERSONALIZATION_STRING_LENGTH_BYTES: Final = 2**35 // 8
"""SP 800-90A Table 2 ``max_personalization_string_length``: 2**35 bits."""
MAX_ADDITIONAL_INPUT_LENGTH_BYTES: Final = 2**35 // 8
"""SP 800-90A Table 2 ``max_additional_input_length``: 2**35 bits."""
MAX_BYTES_PER_REQUEST: Final = 2**19 // 8
"""SP 800-90A Table 2 ``max_number_of_bits_per_request``: 2**19 bits, 65,536 bytes."""
RESEED_INTERVAL: Final = 2**48
"""SP 800-90A Table 2 ``reseed_interval``: Generate requests allowed between reseeds."""

_SHA256: Final = hashes.SHA256()
_INITIAL_KEY: Final = b"\x00" * OUTPUT_BLOCK_LENGTH_BYTES
_INITIAL_VALUE: Final = b"\x01" * OUTPUT_BLOCK_LENGTH_BYTES


class DrbgError(RngError):
    """The DRBG was misused: an input out of bounds, or a reseed that is due."""


def _check_bytes(name: str, value: object, min_length_bytes: int, max_length_bytes: int) -> bytes:
    if not isinstance(value, bytes):
        msg = f"{name} must be bytes, not {type(value).__name__}"
        raise DrbgError(msg)
    if not min_length_bytes <= len(value) <= max_length_bytes:
        msg = (
            f"{name} must be {min_length_bytes}..{max_length_bytes} bytes long, "
            f"got {len(value)} bytes"
        )
        raise DrbgError(msg)
    return value


class HmacDrbg:
    """HMAC_DRBG (SP 800-90A Rev. 1, section 10.1.2) over HMAC-SHA-256.

    ``HmacDrbg(entropy_input, nonce, personalization)`` is the Instantiate function,
    :meth:`generate` the Generate function and :meth:`reseed` the Reseed function, with the
    standard's limits enforced; any violation raises :class:`DrbgError`.

    For speed, the HMAC context keyed with the current ``K`` is built once per key and copied for
    every message, instead of re-deriving the HMAC pads on each call.
    """

    __slots__ = ("_keyed_hmac", "_reseed_counter", "_reseed_interval", "_value")

    def __init__(
        self,
        entropy_input: bytes,
        nonce: bytes,
        personalization: bytes = b"",
        *,
        reseed_interval: int = RESEED_INTERVAL,
    ) -> None:
        """Instantiate (SP 800-90A 10.1.2.3).

        ``reseed_interval`` may only be lowered below the standard's 2**48, which lets tests
        reach the "reseed required" state.
        """
        _check_bytes(
            "entropy_input",
            entropy_input,
            MIN_ENTROPY_INPUT_LENGTH_BYTES,
            MAX_ENTROPY_INPUT_LENGTH_BYTES,
        )
        _check_bytes("nonce", nonce, MIN_NONCE_LENGTH_BYTES, MAX_NONCE_LENGTH_BYTES)
        _check_bytes("personalization", personalization, 0, MAX_PERSONALIZATION_STRING_LENGTH_BYTES)
        if (
            isinstance(reseed_interval, bool)
            or not isinstance(reseed_interval, int)
            or not 1 <= reseed_interval <= RESEED_INTERVAL
        ):
            msg = f"reseed_interval must be an int in 1..{RESEED_INTERVAL}, got {reseed_interval!r}"
            raise DrbgError(msg)
        self._reseed_interval = reseed_interval
        self._set_key(_INITIAL_KEY)
        self._value = _INITIAL_VALUE
        self._update(entropy_input + nonce + personalization)
        self._reseed_counter = 1

    def __repr__(self) -> str:
        # K and V are the secret state: never show them.
        return f"HmacDrbg(reseed_counter={self._reseed_counter})"

    @property
    def reseed_counter(self) -> int:
        """The standard's ``reseed_counter``: 1 after (re)seeding, plus one per Generate."""
        return self._reseed_counter

    def generate(self, n_bytes: int, additional_input: bytes = b"") -> bytes:
        """Return ``n_bytes`` pseudorandom bytes (Generate, SP 800-90A 10.1.2.5).

        ``n_bytes`` may be 0..:data:`MAX_BYTES_PER_REQUEST`. Every call advances the state, even
        one asking for 0 bytes, exactly as the standard's Generate does.
        """
        if isinstance(n_bytes, bool) or not isinstance(n_bytes, int):
            msg = f"n_bytes must be an int, not {type(n_bytes).__name__}"
            raise DrbgError(msg)
        if not 0 <= n_bytes <= MAX_BYTES_PER_REQUEST:
            msg = f"n_bytes must be in 0..{MAX_BYTES_PER_REQUEST}, got {n_bytes}"
            raise DrbgError(msg)
        _check_bytes("additional_input", additional_input, 0, MAX_ADDITIONAL_INPUT_LENGTH_BYTES)
        if self._reseed_counter > self._reseed_interval:
            msg = "reseed required: the reseed interval is exhausted"
            raise DrbgError(msg)
        if additional_input:
            self._update(additional_input)
        blocks: list[bytes] = []
        value = self._value
        keyed_hmac = self._keyed_hmac
        for _ in range(-(-n_bytes // OUTPUT_BLOCK_LENGTH_BYTES)):
            block = keyed_hmac.copy()
            block.update(value)
            value = block.finalize()
            blocks.append(value)
        self._value = value
        self._update(additional_input)
        self._reseed_counter += 1
        return b"".join(blocks)[:n_bytes]

    def reseed(self, entropy_input: bytes, additional_input: bytes = b"") -> None:
        """Mix fresh entropy into the state (Reseed, SP 800-90A 10.1.2.4)."""
        _check_bytes(
            "entropy_input",
            entropy_input,
            MIN_ENTROPY_INPUT_LENGTH_BYTES,
            MAX_ENTROPY_INPUT_LENGTH_BYTES,
        )
        _check_bytes("additional_input", additional_input, 0, MAX_ADDITIONAL_INPUT_LENGTH_BYTES)
        self._update(entropy_input + additional_input)
        self._reseed_counter = 1

    def _set_key(self, key: bytes) -> None:
        # Only the keyed context is kept: K itself is never needed again once it is loaded.
        self._keyed_hmac = hmac.HMAC(key, _SHA256)

    def _mac(self, message: bytes) -> bytes:
        context = self._keyed_hmac.copy()
        context.update(message)
        return context.finalize()

    def _update(self, provided_data: bytes) -> None:
        """HMAC_DRBG_Update (SP 800-90A 10.1.2.2)."""
        self._set_key(self._mac(self._value + b"\x00" + provided_data))
        self._value = self._mac(self._value)
        if not provided_data:
            return
        self._set_key(self._mac(self._value + b"\x01" + provided_data))
        self._value = self._mac(self._value)
