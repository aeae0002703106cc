"""Canonical bytes of what a round verification hashes and compares (pure: engine, stdlib).

The log's entries, the engine's events and the match state are hashed as canonical JSON
(:mod:`app.games.canonical`); the verifier encodes stored data without the float scan (the
data came from the database or a bundle, where a float cannot be) and encodes the engine's
events straight from their records (:func:`event_bytes`).
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from app.games.canonical import FAST_ENCODE, canonical_json_unchecked

__all__ = ("KIND_MEMBERS", "canonical", "chain_hash", "event_bytes", "event_dict", "state_hash")


def canonical(value: Any) -> bytes:
    """Canonical JSON of stored data, without the float scan (see :mod:`app.games.canonical`)."""
    return canonical_json_unchecked(value)


def state_hash(match: Any) -> str:
    """``match.state_hash()``, without the float scan."""
    return hashlib.sha256(canonical_json_unchecked(match.snapshot())).hexdigest()


def chain_hash(previous: bytes, seq: int, kind: str, body: Any) -> bytes:
    """``entry_hash`` of :mod:`app.tables.roundlog`, without the float scan."""
    return hashlib.sha256(
        previous + canonical_json_unchecked({"seq": seq, "kind": kind, "body": body})
    ).digest()


_EVENT_FIELDS: dict[type, tuple[str, ...]] = {}
_CONTAINERS = (tuple, list, dict)


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind is tuple or kind is list:
        return [_plain(item) if type(item) in _CONTAINERS else item for item in value]
    if kind is dict:
        return {
            key: _plain(item) if type(item) in _CONTAINERS else item for key, item in value.items()
        }
    return value


def event_dict(event: Any) -> dict[str, Any]:
    """``event.to_dict()``, computed faster (field names cached per event class)."""
    cls = type(event)
    names = _EVENT_FIELDS.get(cls)
    if names is None:
        names = _EVENT_FIELDS[cls] = tuple(field.name for field in dataclasses.fields(cls))
    data: dict[str, Any] = {"type": cls.type}
    for name in names:
        value = getattr(event, name)
        data[name] = _plain(value) if type(value) in _CONTAINERS else value
    return data


_TYPE_LAST: dict[type, bytes | None] = {}


def _type_member(cls: type) -> bytes | None:
    """``,"type":"<name>"}`` when ``type`` is the last key of the class's sorted dict form and
    the fast encoder writes dataclasses (else None)."""
    names = tuple(field.name for field in dataclasses.fields(cls))
    if FAST_ENCODE is None or any(name >= "type" for name in names):
        return None
    return b',"type":' + canonical_json_unchecked(cls.type) + b"}"  # type: ignore[attr-defined]


def event_bytes(event: Any) -> bytes:
    """``canonical(event.to_dict())``, computed faster.

    ``msgspec`` writes a dataclass as an object of its fields in sorted order; the event's
    ``type`` (a class attribute, not a field) sorts after every field of most events, so it
    is appended before the closing brace.  Other events, or no ``msgspec``, take the dict
    route.  ``tests/unit/compliance/test_verifier.py`` checks the two agree on every event
    the engine produces.
    """
    cls = type(event)
    member = _TYPE_LAST.get(cls, b"")
    if member == b"":
        member = _TYPE_LAST[cls] = _type_member(cls)
    if member is None or FAST_ENCODE is None:
        return canonical_json_unchecked(event_dict(event))
    return FAST_ENCODE(event)[:-1] + member


KIND_MEMBERS = {
    kind: b',"kind":' + canonical_json_unchecked(kind) + b',"seq":'
    for kind in ("event", "input", "chance", "note")
}
