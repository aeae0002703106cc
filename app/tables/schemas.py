"""HTTP payloads of the table context."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from app.tables.creation import MAX_ENTRY_CENTS

__all__ = ("ActionRequest", "CancelRequest", "ClientSeedRequest", "FeeRateChange", "TableCreate")

FreeText = Annotated[
    str,
    # PostgreSQL cannot store U+0000 in text or jsonb: refused here, not a 500 from the write
    msgspec.Meta(max_length=200, pattern=r"^[^\x00]*$"),
]
"""A short note kept in the database (a cancellation's or a fee change's reason)."""

ActionId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=64,
        # (?!\n): Python's $ also matches before a final newline ("a-1\n" is another id)
        pattern=r"^[A-Za-z0-9._:-]+(?!\n)$",
        description="Chosen by the client; a retry with the same id is not applied twice.",
    ),
]


class TableCreate(msgspec.Struct, forbid_unknown_fields=True):
    """A new entry table."""

    seat_count: Annotated[int, msgspec.Meta(ge=2, le=10)]
    entry_cents: Annotated[int, msgspec.Meta(ge=0, le=MAX_ENTRY_CENTS)]
    """Entry fee in centavos (0 for a free table)."""
    preset: str = "cacheta-raiz"
    fill_deadline_s: Annotated[int, msgspec.Meta(ge=10, le=7 * 24 * 3600)] = 600
    """The table is cancelled and refunded if it has not started by then."""
    options: dict[str, int] = msgspec.field(default_factory=dict)
    """Table options within the preset's bounds, e.g. ``{"lives": 5}``."""


class ActionRequest(msgspec.Struct, forbid_unknown_fields=True):
    """A player's move: ``decide`` (mandar), ``draw_stock``, ``draw_discard``, ``discard``
    (card), ``close`` (optional partition and discard) or ``claim``."""

    action_id: ActionId
    action: dict[str, Any]
    """e.g. ``{"type": "decide", "mandar": true}``, ``{"type": "discard", "card": 57}``."""


class ClientSeedRequest(msgspec.Struct, forbid_unknown_fields=True):
    """A player's own contribution to the next deal's randomness."""

    client_seed_hex: Annotated[
        str, msgspec.Meta(min_length=2, max_length=128, pattern=r"^([0-9a-fA-F]{2})+(?!\n)$")
    ]


class CancelRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Why an open table is cancelled (every entry is refunded)."""

    reason: FreeText = "cancelled"


class FeeRateChange(msgspec.Struct, forbid_unknown_fields=True):
    """A new platform fee rate for tables created from now on."""

    fee_bps: Annotated[int, msgspec.Meta(ge=0, le=5_000)]
    reason: FreeText = ""
