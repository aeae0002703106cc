"""Signature of the payment provider's webhook: ``X-Raiz-Signature: sha256=<hex>``."""

from __future__ import annotations

import hashlib
import hmac

from app.errors import AuthenticationError

__all__ = ("SIGNATURE_HEADER", "SIGNATURE_PREFIX", "sign", "verify_signature")

SIGNATURE_HEADER = "X-Raiz-Signature"
"""Carries ``sha256=`` and the hex HMAC-SHA256 of the raw request body."""
SIGNATURE_PREFIX = "sha256="


def sign(secret: str, body: bytes) -> str:
    """The header value the provider sends for ``body``."""
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return f"{SIGNATURE_PREFIX}{digest}"


def verify_signature(secret: str, body: bytes, header: str | None) -> None:
    """Refuse (401 ``invalid_signature``) unless ``header`` signs ``body`` with ``secret``.

    The comparison takes constant time, so the response time reveals nothing about how
    much of a forged signature was right.
    """
    if not header:
        raise AuthenticationError(
            f"The {SIGNATURE_HEADER} header is required.", code="invalid_signature"
        )
    if not hmac.compare_digest(header.strip().encode("utf-8"), sign(secret, body).encode()):
        raise AuthenticationError(
            f"The {SIGNATURE_HEADER} header does not sign this body.", code="invalid_signature"
        )
