"""Prometheus metrics of the RNG service.

Labels carry only the algorithm version and the *kind* of stream label (``deal``,
``first_dealer``, ``reshuffle``, ``other``), never a seed, a client seed, a commitment or a round
id. Counters are incremented when the service does the work, inside the caller's transaction; a
transaction rolled back afterwards is still counted.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter

__all__ = (
    "CLIENT_SEEDS_ADDED",
    "FIXED_STREAMS_USED",
    "REVEALS",
    "ROUNDS_COMMITTED",
    "STREAMS_DRAWN",
    "label_kind",
)

_KNOWN_LABELS: Final = frozenset({"deal", "first_dealer"})
_RESHUFFLE_PREFIX: Final = "reshuffle/"

ROUNDS_COMMITTED = Counter(
    "raiz_rng_rounds_committed",
    "Rounds whose seed was drawn, sealed and committed.",
    ["version"],
)
CLIENT_SEEDS_ADDED = Counter(
    "raiz_rng_client_seeds_added",
    "Client seeds accepted before a deal.",
    ["version"],
)
STREAMS_DRAWN = Counter(
    "raiz_rng_streams_drawn",
    "Labelled streams drawn for the first time in their round, by label kind.",
    ["kind"],
)
REVEALS = Counter(
    "raiz_rng_reveals",
    "Round seeds revealed.",
    ["version"],
)
FIXED_STREAMS_USED = Counter(
    "raiz_rng_fixed_streams_used",
    "Test-only fixed streams handed out instead of seeded ones; must stay 0 in production.",
    ["kind"],
)


def label_kind(label: str) -> str:
    """The bounded metric label for a stream label: ``reshuffle/7`` is ``reshuffle``."""
    if label in _KNOWN_LABELS:
        return label
    if label.startswith(_RESHUFFLE_PREFIX):
        return "reshuffle"
    return "other"
