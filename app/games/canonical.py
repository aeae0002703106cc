"""Canonical JSON: the bytes every hash of the product is taken over (pure, no I/O).

**Definition.** The canonical JSON of a value is::

    json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
               allow_nan=False).encode("utf-8")

over values made of ``None``, booleans, integers, strings, lists (tuples encode as lists) and
dicts with string keys -- no floats.  The round log's hash chain, the engine's state hash,
signed round records and checkpoints all use it; ``docs/rules-engine.md`` and
``docs/compliance.md`` state it for third-party verifiers.

**Implementation.** ``msgspec``'s JSON encoder with sorted keys writes the very same bytes on
that domain about six times faster than the standard library (``tests/unit/test_canonical.py``
checks the two against each other with Hypothesis); without ``msgspec`` (a verifier that
installed only ``cryptography``) the definition itself runs.  The two differ on floats
(``1e+16`` against ``1e16``; ``msgspec`` writes NaN as ``null``), which is why the domain
excludes them:

* :func:`canonical_json` -- for writers (the round log, the engine's state hash, signing):
  refuses a float anywhere, so nothing stored can depend on how floats are written;
* :func:`canonical_json_unchecked` -- for verifiers re-hashing stored data: skips that scan.
  Stored data was written without floats, so a float in it can only be tampering, and a float
  token (``1.0``, ``1e16``) cannot occur in a float-free encoding: the re-computed hash
  differs from the recorded one whichever encoder runs.  (Bundle readers refuse ``NaN`` and
  ``Infinity`` when parsing, the one case ``msgspec`` would write as ``null``.)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = (
    "FAST_ENCODE",
    "canonical_json",
    "canonical_json_unchecked",
    "reference_canonical_json",
)


def reference_canonical_json(value: Any) -> bytes:
    """The definition, with the standard library (refuses NaN and infinities)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def _fast_encoder() -> Callable[[Any], bytes] | None:
    try:
        import msgspec
    except ImportError:  # pragma: no cover - msgspec is a dependency of the service
        return None
    encode: Callable[[Any], bytes] = msgspec.json.Encoder(order="sorted").encode
    return encode


_ENCODE = _fast_encoder()
FAST_ENCODE = _ENCODE
"""``msgspec``'s sorted-keys JSON encoder, or None without ``msgspec``: the canonical JSON of
the domain, which it also writes for dataclasses (fields in sorted order)."""


def canonical_json_unchecked(value: Any) -> bytes:
    """Canonical JSON of a float-free value, without checking that it is float-free."""
    if _ENCODE is None:  # pragma: no cover - see _fast_encoder
        return reference_canonical_json(value)
    try:
        return _ENCODE(value)
    except TypeError:
        # msgspec refuses what it cannot sort (non-string keys) or encode; the definition
        # decides (and raises for anything JSON cannot hold)
        return reference_canonical_json(value)


def _refuse_floats(value: Any) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if type(key) is not str:
                raise TypeError("canonical JSON needs string keys")
            if type(item) not in _SCALARS:
                _refuse_floats(item)
    elif isinstance(value, list | tuple):
        for item in value:
            if type(item) not in _SCALARS:
                _refuse_floats(item)
    elif isinstance(value, float):
        raise TypeError("canonical JSON holds integers only, not floats")


_SCALARS = frozenset({str, int, bool, type(None)})


def canonical_json(value: Any) -> bytes:
    """Canonical JSON of ``value``; ``TypeError`` for floats and non-string keys."""
    _refuse_floats(value)
    return canonical_json_unchecked(value)
