"""The hash chain of a round's log (pure functions, shared with the verifiers).

Each entry is ``{seq, kind, body}``; its hash is
``SHA-256(previous hash ‖ canonical JSON of the entry)``, where the canonical JSON
(:mod:`app.games.canonical`) has sorted keys, no whitespace, UTF-8 bytes and no floats.  The
chain starts from a genesis hash bound to the round and to the seed commitment published
before the deal:
``SHA-256("raiz/round-log/1" ‖ 0x00 ‖ round id (16 bytes) ‖ 0x00 ‖ commitment (ASCII hex))``.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from app.games.canonical import canonical_json

__all__ = ("LOG_VERSION", "canonical_json", "entry_hash", "genesis_hash")

LOG_VERSION = b"raiz/round-log/1"
"""Domain tag of the chain (part of the genesis hash)."""


def genesis_hash(round_id: uuid.UUID, commitment: str) -> bytes:
    """The hash the first entry of a round chains from."""
    return hashlib.sha256(
        LOG_VERSION + b"\x00" + round_id.bytes + b"\x00" + commitment.encode("ascii")
    ).digest()


def entry_hash(previous: bytes, seq: int, kind: str, body: dict[str, Any]) -> bytes:
    """The hash of entry ``seq`` given the hash before it."""
    return hashlib.sha256(
        previous + canonical_json({"seq": seq, "kind": kind, "body": body})
    ).digest()
