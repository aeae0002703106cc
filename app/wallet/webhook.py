"""Signature of the payment provider's webhook.

The provider sends ``X-Raiz-Signature: t=<unix seconds>,sha256=<hex>[,sha256=<hex>...]``:
``t`` is when it signed, each ``sha256`` the hex HMAC-SHA256, with one of its secrets, of the
ASCII decimal ``t``, a ``.`` and the raw request body (docs/ledger.md, "The webhook's
signature").  The service accepts the header when any listed signature matches any of its
secrets (the current one and those still accepted during a rotation) and ``t`` is within the
tolerance of its clock; the old untimestamped ``sha256=<hex>`` alone is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from app.errors import AuthenticationError

__all__ = (
    "MAX_SIGNATURES",
    "SIGNATURE_HEADER",
    "MatchedSecret",
    "ParsedSignature",
    "StaleSignature",
    "parse_signature_header",
    "sign",
    "signed_payload",
    "verify_signature",
)

SIGNATURE_HEADER = "X-Raiz-Signature"
"""Carries ``t=<unix seconds>`` and one or more ``sha256=<hex>`` signatures."""
MAX_SIGNATURES = 8
"""The most ``sha256=`` values one header may carry (one per secret the provider signs with
during its own rotation); more is refused as malformed."""
_FORMAT = "t=<unix seconds>,sha256=<64 hex digits>[,sha256=<64 hex digits>...]"
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_DIGEST = re.compile(r"[0-9a-fA-F]{64}")

MatchedSecret = Literal["current", "previous"]
"""Which accepted secret a header's signature matched: ``current`` (the first secret) when any
of its signatures matches it, else ``previous`` (one of the others).  Never the secret itself."""


class StaleSignature(AuthenticationError):
    """401 ``stale_signature``: a signature matching ``secret`` but dated out of the window.

    ``secret`` is for the service's own metrics, never in the response: a caller learns
    nothing of which secret matched."""

    def __init__(self, message: str, *, secret: MatchedSecret, details: dict[str, Any]) -> None:
        super().__init__(message, code="stale_signature", details=details)
        self.secret: MatchedSecret = secret


def _secrets(secrets: str | Sequence[str]) -> tuple[str, ...]:
    # A bare string is one secret, not a sequence of one-character secrets.
    return (secrets,) if isinstance(secrets, str) else tuple(secrets)


def signed_payload(timestamp: int, body: bytes) -> bytes:
    """What is signed: the ASCII decimal ``timestamp``, ``.``, then the raw body."""
    return f"{timestamp}.".encode("ascii") + body


def _digest(secret: str, timestamp: int, body: bytes) -> bytes:
    return hmac.new(
        secret.encode("utf-8"), signed_payload(timestamp, body), hashlib.sha256
    ).digest()


def sign(secrets: str | Sequence[str], body: bytes, timestamp: int | None = None) -> str:
    """The header value the provider sends for ``body`` signed at ``timestamp`` (default: now),
    with one ``sha256=`` per secret (several while the provider rotates its own)."""
    t = int(time.time()) if timestamp is None else timestamp
    signatures = ",".join(f"sha256={_digest(s, t, body).hex()}" for s in _secrets(secrets))
    return f"t={t},{signatures}"


@dataclass(frozen=True, slots=True)
class ParsedSignature:
    """A well-formed header: the signing time and the raw signatures it lists."""

    timestamp: int
    digests: tuple[bytes, ...]


def _malformed(problem: str) -> AuthenticationError:
    return AuthenticationError(
        f"The {SIGNATURE_HEADER} header is malformed ({problem}); expected {_FORMAT}.",
        code="malformed_signature",
    )


def parse_signature_header(header: str) -> ParsedSignature:
    """Split ``t=...,sha256=...`` (401 ``malformed_signature`` unless exactly one ``t`` of
    1-12 decimal digits and 1 to :data:`MAX_SIGNATURES` ``sha256`` of 64 hex digits, in any
    order, with nothing else; spaces around items are ignored)."""
    timestamps: list[int] = []
    digests: list[bytes] = []
    for item in header.split(","):
        name, separator, value = item.strip().partition("=")
        if not separator:
            raise _malformed("each item is name=value")
        if name == "t":
            if not _TIMESTAMP.fullmatch(value):
                raise _malformed("t is not a whole number of seconds")
            timestamps.append(int(value))
        elif name == "sha256":
            if not _DIGEST.fullmatch(value):
                raise _malformed("a sha256 value is not 64 hex digits")
            digests.append(bytes.fromhex(value))
        else:
            raise _malformed("only t and sha256 items are allowed")
    if len(timestamps) != 1:
        raise _malformed("exactly one t= timestamp is required")
    if not digests:
        raise _malformed("no sha256= signature")
    if len(digests) > MAX_SIGNATURES:
        raise _malformed(f"more than {MAX_SIGNATURES} signatures")
    return ParsedSignature(timestamps[0], tuple(digests))


def verify_signature(
    secrets: str | Sequence[str],
    body: bytes,
    header: str | None,
    *,
    tolerance_s: int,
    now: float | None = None,
) -> MatchedSecret:
    """Refuse unless ``header`` signs ``body`` with one of ``secrets`` at a time within
    ``tolerance_s`` seconds (inclusive) of ``now`` (default: the clock), in either direction.

    Refusals are 401: ``invalid_signature`` (no header, or no signature matches any secret),
    ``malformed_signature`` (:func:`parse_signature_header`) and ``stale_signature`` (a
    matching signature whose timestamp is out of the window: a replay, or a clock off by
    more than the tolerance).  Every listed signature is compared with every secret's, each
    comparison in constant time and none skipped, so the response time reveals neither how
    much of a forged signature was right nor which secret matched.  Returns which secret
    matched (:data:`MatchedSecret`: ``current`` whenever the first secret did), for the
    delivery metrics; a stale signature's is on the :class:`StaleSignature` it raises.
    """
    if not header or not header.strip():
        raise AuthenticationError(
            f"The {SIGNATURE_HEADER} header is required.", code="invalid_signature"
        )
    parsed = parse_signature_header(header)
    matches = []
    for secret in _secrets(secrets):
        expected = _digest(secret, parsed.timestamp, body)
        matched = False
        for given in parsed.digests:
            matched |= hmac.compare_digest(expected, given)
        matches.append(matched)
    if not any(matches):
        raise AuthenticationError(
            f"The {SIGNATURE_HEADER} header does not sign this body.", code="invalid_signature"
        )
    which: MatchedSecret = "current" if matches[0] else "previous"
    clock = int(time.time() if now is None else now)
    age = clock - parsed.timestamp
    if abs(age) > tolerance_s:
        when = f"{age} s old" if age > 0 else f"{-age} s ahead of the server's clock"
        raise StaleSignature(
            f"The {SIGNATURE_HEADER} timestamp is {when}, beyond the {tolerance_s} s "
            "tolerance; sign each delivery when sending it.",
            secret=which,
            details={"age_s": age, "tolerance_s": tolerance_s},
        )
    return which
