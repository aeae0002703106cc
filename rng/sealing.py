"""Encrypting round seeds at rest with AES-256-GCM, with key ids so keys can rotate.

A seed stays secret until its round is revealed, so the service stores it sealed:

* :class:`SeedSealer` holds a keyring (key id to 32-byte key) and the id of the *active* key.
  :meth:`SeedSealer.seal` always uses the active key and records its id in the
  :class:`SealedSeed`; :meth:`SeedSealer.open` uses whichever key the sealed seed names. Rotating
  is therefore: add the new key, make it active, keep the old ones until nothing sealed under
  them is left.
* The caller's ``associated_data`` (for example ``b"round:" + round_id``) is authenticated with
  the ciphertext, so a sealed seed moved to another round does not open.
* The GCM associated data is ``b"raiz-rng/seal/1" || 0x00 || key_id || 0x00 ||
  associated_data``, which also binds the key id; the nonce is 12 random bytes per seal. With
  random nonces NIST SP 800-38D allows 2**32 seals per key, far above one per round; rotate long
  before that.

:func:`parse_keyring` reads the keyring from a settings string ``"k1:<base64>,k2:<base64>"``.
Error messages name key ids but never show key material.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from rng.errors import RngError

__all__ = (
    "KEY_LENGTH_BYTES",
    "MAX_ASSOCIATED_DATA_LENGTH_BYTES",
    "MAX_KEYS",
    "MAX_KEY_ID_LENGTH",
    "MAX_SEED_LENGTH_BYTES",
    "MIN_SEED_LENGTH_BYTES",
    "NONCE_LENGTH_BYTES",
    "TAG_LENGTH_BYTES",
    "SealedSeed",
    "SealingError",
    "SeedSealer",
    "parse_keyring",
)

KEY_LENGTH_BYTES: Final = 32
"""Keys are AES-256 keys."""
NONCE_LENGTH_BYTES: Final = 12
"""The GCM nonce, 96 random bits per seal."""
TAG_LENGTH_BYTES: Final = 16
"""The GCM authentication tag, appended to the ciphertext."""
MIN_SEED_LENGTH_BYTES: Final = 16
"""The shortest plaintext sealed; round seeds are 32 bytes."""
MAX_SEED_LENGTH_BYTES: Final = 64
"""The longest plaintext sealed."""
MAX_ASSOCIATED_DATA_LENGTH_BYTES: Final = 1024
"""The longest caller associated data; it must be non-empty, so every seal binds to a round."""
MAX_KEY_ID_LENGTH: Final = 32
"""The longest key id; ids use ``A-Z a-z 0-9 _ . -`` only."""
MAX_KEYS: Final = 64
"""The most keys one keyring holds."""

_KEY_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_.-]{1,32}")
_AAD_PREFIX: Final = b"raiz-rng/seal/1\x00"
_KEYRING_ENTRY_SEPARATOR: Final = ","
_KEYRING_ID_SEPARATOR: Final = ":"


class SealingError(RngError):
    """A keyring, sealed seed or associated data is invalid, or a sealed seed did not open."""


def _check_key_id(key_id: object) -> str:
    if not isinstance(key_id, str) or not _KEY_ID_PATTERN.fullmatch(key_id):
        msg = (
            f"key id must be 1..{MAX_KEY_ID_LENGTH} characters from A-Z a-z 0-9 _ . -, "
            f"got {key_id!r}"
        )
        raise SealingError(msg)
    return key_id


def _check_bytes(name: str, value: object, min_length_bytes: int, max_length_bytes: int) -> bytes:
    if not isinstance(value, bytes):
        msg = f"{name} must be bytes, not {type(value).__name__}"
        raise SealingError(msg)
    if not min_length_bytes <= len(value) <= max_length_bytes:
        msg = f"{name} must be {min_length_bytes}..{max_length_bytes} bytes, got {len(value)}"
        raise SealingError(msg)
    return value


@dataclass(frozen=True, slots=True)
class SealedSeed:
    """An encrypted seed as stored: all three fields are needed to open it."""

    key_id: str
    """The id of the key that sealed it."""
    nonce: bytes
    """The 12-byte GCM nonce."""
    ciphertext: bytes
    """The encrypted seed followed by the 16-byte GCM tag."""

    def __post_init__(self) -> None:
        _check_key_id(self.key_id)
        _check_bytes("nonce", self.nonce, NONCE_LENGTH_BYTES, NONCE_LENGTH_BYTES)
        _check_bytes(
            "ciphertext",
            self.ciphertext,
            MIN_SEED_LENGTH_BYTES + TAG_LENGTH_BYTES,
            MAX_SEED_LENGTH_BYTES + TAG_LENGTH_BYTES,
        )


def _gcm_associated_data(key_id: str, associated_data: bytes) -> bytes:
    _check_bytes("associated_data", associated_data, 1, MAX_ASSOCIATED_DATA_LENGTH_BYTES)
    return _AAD_PREFIX + key_id.encode("ascii") + b"\x00" + associated_data


class SeedSealer:
    """Seals seeds with the active key and opens them with the key they name."""

    __slots__ = ("_active_key_id", "_ciphers")

    def __init__(self, keys: Mapping[str, bytes], active_key_id: str) -> None:
        if not isinstance(keys, Mapping) or not keys:
            msg = "keys must be a non-empty mapping of key id to key"
            raise SealingError(msg)
        if len(keys) > MAX_KEYS:
            msg = f"at most {MAX_KEYS} keys, got {len(keys)}"
            raise SealingError(msg)
        ciphers: dict[str, AESGCM] = {}
        for key_id, key in keys.items():
            _check_key_id(key_id)
            if not isinstance(key, bytes) or len(key) != KEY_LENGTH_BYTES:
                msg = f"key {key_id!r} must be {KEY_LENGTH_BYTES} bytes (AES-256)"
                raise SealingError(msg)
            ciphers[key_id] = AESGCM(key)
        _check_key_id(active_key_id)
        if active_key_id not in ciphers:
            msg = f"active key id {active_key_id!r} is not in the keyring"
            raise SealingError(msg)
        self._ciphers = ciphers
        self._active_key_id = active_key_id

    @classmethod
    def from_settings(cls, keyring: str, active_key_id: str) -> SeedSealer:
        """Build a sealer from the keyring settings string (see :func:`parse_keyring`)."""
        return cls(parse_keyring(keyring), active_key_id)

    def __repr__(self) -> str:
        return f"SeedSealer(key_ids={self.key_ids!r}, active_key_id={self._active_key_id!r})"

    @property
    def active_key_id(self) -> str:
        """The id of the key new seals use."""
        return self._active_key_id

    @property
    def key_ids(self) -> tuple[str, ...]:
        """Every key id this sealer can open, sorted."""
        return tuple(sorted(self._ciphers))

    def seal(self, seed: bytes, associated_data: bytes) -> SealedSeed:
        """Encrypt ``seed`` under the active key, bound to ``associated_data``."""
        _check_bytes("seed", seed, MIN_SEED_LENGTH_BYTES, MAX_SEED_LENGTH_BYTES)
        key_id = self._active_key_id
        gcm_associated_data = _gcm_associated_data(key_id, associated_data)
        nonce = os.urandom(NONCE_LENGTH_BYTES)
        ciphertext = self._ciphers[key_id].encrypt(nonce, seed, gcm_associated_data)
        return SealedSeed(key_id=key_id, nonce=nonce, ciphertext=ciphertext)

    def open(self, sealed: SealedSeed, associated_data: bytes) -> bytes:
        """Decrypt a sealed seed; the associated data must be what it was sealed with."""
        if not isinstance(sealed, SealedSeed):
            msg = f"sealed must be a SealedSeed, not {type(sealed).__name__}"
            raise SealingError(msg)
        cipher = self._ciphers.get(sealed.key_id)
        if cipher is None:
            msg = (
                f"unknown key id {sealed.key_id!r}: the keyring has {list(self.key_ids)}; "
                "was a key removed while seeds sealed under it remain?"
            )
            raise SealingError(msg)
        gcm_associated_data = _gcm_associated_data(sealed.key_id, associated_data)
        try:
            return cipher.decrypt(sealed.nonce, sealed.ciphertext, gcm_associated_data)
        except InvalidTag:
            msg = (
                f"sealed seed did not open with key {sealed.key_id!r}: wrong associated data "
                "(another round?), wrong key material, or a tampered ciphertext"
            )
            raise SealingError(msg) from None


def parse_keyring(text: str) -> dict[str, bytes]:
    """Parse ``"id:<base64 key>,id:<base64 key>"`` into a key id to key mapping.

    Whitespace around entries, ids and keys is ignored. Keys use the standard base64 alphabet
    with padding and must decode to 32 bytes. Ids must be unique. Messages never show keys.
    """
    if not isinstance(text, str) or not text.strip():
        msg = "the keyring setting is empty; expected 'id:<base64 key>,id:<base64 key>'"
        raise SealingError(msg)
    keys: dict[str, bytes] = {}
    for position, entry in enumerate(text.split(_KEYRING_ENTRY_SEPARATOR), start=1):
        key_id, separator, encoded = entry.partition(_KEYRING_ID_SEPARATOR)
        key_id = key_id.strip()
        if not separator:
            msg = f"keyring entry {position} has no ':' between key id and key"
            raise SealingError(msg)
        _check_key_id(key_id)
        if key_id in keys:
            msg = f"keyring entry {position} repeats key id {key_id!r}"
            raise SealingError(msg)
        try:
            key = base64.b64decode(encoded.strip(), validate=True)
        except binascii.Error:
            msg = f"keyring entry {position} ({key_id!r}) is not valid base64"
            raise SealingError(msg) from None
        if len(key) != KEY_LENGTH_BYTES:
            msg = (
                f"keyring entry {position} ({key_id!r}) decodes to {len(key)} bytes, "
                f"expected {KEY_LENGTH_BYTES}"
            )
            raise SealingError(msg)
        keys[key_id] = key
    return keys
