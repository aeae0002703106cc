"""Turning refusals of the rules engine into HTTP errors."""

from __future__ import annotations

from app.errors import AppError, ConflictError, UnprocessableError, ValidationFailed
from app.games.errors import GameError

__all__ = ("from_game_error",)

# Refusals that mean "the table moved on" (stale or out-of-turn) rather than a broken rule.
_GAME_CONFLICTS = frozenset(
    {
        "not_your_turn",
        "wrong_phase",
        "match_over",
        "no_deadline",
        "stale_deadline",
        "already_decided",
        "already_claimed",
        "not_in_round",
        "seat_eliminated",
        "no_pending_chance",
        "awaiting_chance",
    }
)
_GAME_MALFORMED = frozenset({"invalid_action", "unknown_action"})


def from_game_error(error: GameError) -> AppError:
    """409 for stale/out-of-turn, 400 for malformed, 422 for every other broken rule."""
    if error.code in _GAME_MALFORMED:
        return ValidationFailed(error.message, code=error.code, details=dict(error.details))
    if error.code in _GAME_CONFLICTS:
        return ConflictError(error.message, code=error.code, details=dict(error.details))
    return UnprocessableError(error.message, code=error.code, details=dict(error.details))
