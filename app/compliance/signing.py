"""Ed25519 signatures of round records and checkpoints (pure: ``cryptography`` only).

A keyring is ``key_id:base64(32-byte Ed25519 seed),...`` (``RAIZ_SIGNING_KEYRING``); the
active key (``RAIZ_SIGNING_ACTIVE_KEY_ID``, default the first) signs, every key of the
ring stays usable for nothing but its public half: old signatures are checked against the
public keys the service registered (``game.signing_keys``), which are never deleted, so a
rotation keeps every past signature verifiable.

Each signed message starts with a domain tag, so a round signature can never be replayed as
a checkpoint signature or the other way round:

* round: ``"raiz/round-record/1" ‖ 0x00 ‖ SHA-256(canonical JSON of the record)``;
* checkpoint: ``"raiz/checkpoint/1" ‖ 0x00 ‖ canonical JSON of the checkpoint head``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from app.tables.roundlog import canonical_json

__all__ = (
    "CHECKPOINT_DOMAIN",
    "ROUND_DOMAIN",
    "SIGNATURE_ALGORITHM",
    "Signer",
    "SigningKeyError",
    "checkpoint_message",
    "parse_signing_keyring",
    "round_message",
    "verify_signature",
)

SIGNATURE_ALGORITHM: Final = "ed25519"
"""The only algorithm: Ed25519 (RFC 8032), 32-byte public keys, 64-byte signatures."""
ROUND_DOMAIN: Final = b"raiz/round-record/1\x00"
CHECKPOINT_DOMAIN: Final = b"raiz/checkpoint/1\x00"
_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,32}")
_SEED_BYTES: Final = 32


class SigningKeyError(ValueError):
    """The signing keyring is unusable (the message never contains key material)."""


def parse_signing_keyring(text: str) -> dict[str, Ed25519PrivateKey]:
    """``key_id:base64seed,...`` → private keys by id, in the order given."""
    keys: dict[str, Ed25519PrivateKey] = {}
    for position, item in enumerate(part.strip() for part in text.split(",")):
        if not item:
            continue
        key_id, separator, encoded = item.partition(":")
        if not separator or not _KEY_ID.fullmatch(key_id):
            raise SigningKeyError(
                f"keyring entry {position} needs a key id (1-32 of A-Z a-z 0-9 . _ -)"
            )
        if key_id in keys:
            raise SigningKeyError(f"key id {key_id!r} appears twice")
        try:
            seed = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise SigningKeyError(f"key {key_id!r} is not base64") from None
        if len(seed) != _SEED_BYTES:
            raise SigningKeyError(f"key {key_id!r} must be a 32-byte Ed25519 seed")
        keys[key_id] = Ed25519PrivateKey.from_private_bytes(seed)
    if not keys:
        raise SigningKeyError("the signing keyring is empty")
    return keys


def public_bytes(key: Ed25519PrivateKey) -> bytes:
    """The raw 32-byte public key of ``key``."""
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


@dataclass(frozen=True, slots=True)
class Signer:
    """The active signing key of a keyring."""

    key_id: str
    """Id of the key that signs."""
    public_key: bytes
    """Its raw 32-byte public key."""
    _private: Ed25519PrivateKey

    @classmethod
    def from_keyring(cls, keyring: str, active_key_id: str | None = None) -> Signer:
        """The signer of ``active_key_id`` (default: the first key of the ring)."""
        keys = parse_signing_keyring(keyring)
        key_id = active_key_id or next(iter(keys))
        if key_id not in keys:
            raise SigningKeyError(f"the active signing key {key_id!r} is not in the keyring")
        return cls(key_id, public_bytes(keys[key_id]), keys[key_id])

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``message``."""
        return self._private.sign(message)


def round_message(record_hash: bytes) -> bytes:
    """What a round's signature signs."""
    return ROUND_DOMAIN + record_hash


def checkpoint_message(head: Mapping[str, Any]) -> bytes:
    """What a checkpoint's signature signs (``head``: tree size, root, time, key id)."""
    return CHECKPOINT_DOMAIN + canonical_json(dict(head))


@functools.lru_cache(maxsize=64)
def _public_key(public_key: bytes) -> Ed25519PublicKey:
    """The parsed key (a handful of keys sign every round: parse each once)."""
    return Ed25519PublicKey.from_public_bytes(public_key)


def verify_signature(public_key: bytes, signature: bytes, message: bytes) -> bool:
    """Whether ``signature`` is a valid Ed25519 signature of ``message`` under ``public_key``."""
    try:
        _public_key(bytes(public_key)).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True
