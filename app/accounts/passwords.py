"""Password hashing with scrypt (``cryptography``), parameters stored with each hash."""

from __future__ import annotations

import base64
import secrets

from cryptography.exceptions import InvalidKey
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

__all__ = ("hash_password", "verify_password")

_BLOCK_SIZE = 8
_PARALLELISM = 1
_SALT_BYTES = 16
_HASH_BYTES = 32
_MIN_COST_LOG2 = 10
_MAX_COST_LOG2 = 20


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def hash_password(password: str, cost_log2: int) -> str:
    """A self-describing scrypt hash of ``password``: ``scrypt$n$r$p$salt$hash``."""
    salt = secrets.token_bytes(_SALT_BYTES)
    kdf = Scrypt(salt=salt, length=_HASH_BYTES, n=2**cost_log2, r=_BLOCK_SIZE, p=_PARALLELISM)
    digest = kdf.derive(password.encode("utf-8"))
    return f"scrypt${cost_log2}${_BLOCK_SIZE}${_PARALLELISM}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches ``stored``; malformed hashes never match."""
    try:
        scheme, cost, block, parallel, salt_b64, digest_b64 = stored.split("$")
        cost_log2 = int(cost)
        if scheme != "scrypt" or not _MIN_COST_LOG2 <= cost_log2 <= _MAX_COST_LOG2:
            return False
        salt = base64.b64decode(salt_b64, validate=True)
        expected = base64.b64decode(digest_b64, validate=True)
        kdf = Scrypt(salt=salt, length=len(expected), n=2**cost_log2, r=int(block), p=int(parallel))
        kdf.verify(password.encode("utf-8"), expected)
    except (ValueError, InvalidKey):
        return False
    return True
