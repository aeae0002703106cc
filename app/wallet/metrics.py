"""Prometheus metrics of the wallet: the payment provider's webhook deliveries."""

from __future__ import annotations

from prometheus_client import Counter

__all__ = (
    "NO_MATCH",
    "SIGNATURE_REFUSALS",
    "WEBHOOK_DELIVERIES",
    "count_delivery",
)

WEBHOOK_DELIVERIES = Counter(
    "raiz_payment_webhook_deliveries",
    "Payment webhook deliveries, by outcome (credited, replayed, or the refusal's error code) "
    "and the accepted secret their signature matched (current, previous, none).",
    ["outcome", "secret"],
)
NO_MATCH = "none"
"""The ``secret`` label of a delivery whose signature matched no accepted secret (or that was
refused before its signature was checked)."""
SIGNATURE_REFUSALS = ("invalid_signature", "malformed_signature", "stale_signature")
"""The 401 codes of a refused signature (``app.wallet.webhook``)."""

# The series the alerts watch exist from the start, at 0: a delivery refused first creates no
# series at 1 that increase() cannot see (it needs two samples).
for _code in ("invalid_signature", "malformed_signature"):
    WEBHOOK_DELIVERIES.labels(_code, NO_MATCH)
for _secret in ("current", "previous"):
    WEBHOOK_DELIVERIES.labels("stale_signature", _secret)
    WEBHOOK_DELIVERIES.labels("credited", _secret)


def count_delivery(outcome: str, secret: str | None) -> None:
    """Count one delivery answered with ``outcome`` (``credited``, ``replayed`` or the error
    code of its refusal), signed with the ``current`` or a ``previous`` secret, or ``None``."""
    WEBHOOK_DELIVERIES.labels(outcome, secret or NO_MATCH).inc()
