"""The one domain error of the rules engine, with machine-readable codes.

Every refusal of the engine raises :class:`GameError`; ``code`` is stable (clients and the
service branch on it), ``message`` is for humans, ``details`` carries the offending values.
A refused action never changes the state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ("ERROR_CODES", "GameError", "passes")

ERROR_CODES: frozenset[str] = frozenset(
    {
        # match / input plumbing
        "match_over",
        "awaiting_chance",
        "no_pending_chance",
        "invalid_chance",
        "invalid_seat",
        "invalid_seat_count",
        "seat_eliminated",
        "not_in_round",
        "wrong_phase",
        "not_your_turn",
        "no_deadline",
        "stale_deadline",
        "unknown_action",
        "invalid_action",
        "unsupported_ruleset",
        "invalid_snapshot",
        # decisions
        "already_decided",
        "marra_cannot_run",
        # turn
        "card_not_in_hand",
        "card_locked",
        "discard_pile_empty",
        "discard_draw_restricted",
        "burned",
        "cannot_close",
        "invalid_partition",
        "full_close_not_allowed",
        # claims
        "claim_not_allowed",
        "already_claimed",
        "discarder_cannot_claim",
        # options and notation
        "unknown_preset",
        "unknown_option",
        "invalid_option_value",
        "invalid_card",
        "invalid_hand",
    }
)


class GameError(Exception):
    """A refused action or input: ``code`` is machine-readable, ``details`` JSON-able."""

    __slots__ = ("code", "details", "message")

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unregistered game error code {code!r}")
        super().__init__(f"{code}: {message}")
        self.code = code
        """Stable machine-readable reason (one of :data:`ERROR_CODES`)."""
        self.message = message
        """Human-readable explanation."""
        self.details: dict[str, Any] = dict(details or {})
        """JSON-able values that explain the refusal."""

    def to_dict(self) -> dict[str, Any]:
        """The error as ``{code, message, details}`` (the API's error body shape)."""
        return {"code": self.code, "message": self.message, "details": dict(self.details)}


def passes(check: Callable[..., object], *args: object) -> bool:
    """Whether ``check(*args)`` returns without raising ``GameError`` (the ``can_x`` of a
    ``verify_x``)."""
    try:
        check(*args)
    except GameError:
        return False
    return True
