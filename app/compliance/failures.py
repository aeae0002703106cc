"""What a round verification can find wrong: the checks, the first failure and the outcome.

Shared by the replay checks (:mod:`app.compliance.replay`), the signature checks and
:func:`app.compliance.verify.verify_round`, the money check (:mod:`app.compliance.money`) and
the bundle verifier; pure (stdlib only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ("CHECKS", "Failure", "RoundOutcome", "VerificationFailed", "first_difference")

CHECKS = (
    "format",
    "commitment",
    "chain",
    "chance",
    "replay",
    "final_state",
    "continuity",
    "money",
    "signature",
    "inclusion",
)
"""Every check a failure can name."""


@dataclass(frozen=True, slots=True)
class Failure:
    """The first thing wrong with a round: which check, which item, and why."""

    check: str
    """One of :data:`CHECKS`."""
    item: str
    """What is wrong: ``entry 17``, ``seed``, ``transfer settle:.../payout/0``..."""
    reason: str
    """Why, in one sentence."""

    def __str__(self) -> str:
        return f"{self.check}: {self.item}: {self.reason}"

    def to_dict(self) -> dict[str, str]:
        """JSON form."""
        return {"check": self.check, "item": self.item, "reason": self.reason}


class VerificationFailed(Exception):
    """Raised inside the checks; carries the :class:`Failure`."""

    def __init__(self, check: str, item: str, reason: str) -> None:
        super().__init__(f"{check}: {item}: {reason}")
        self.failure = Failure(check, item, reason)


@dataclass(slots=True)
class RoundOutcome:
    """What verifying one round found (and what the money check needs)."""

    round_id: str
    number: int
    failure: Failure | None = None
    notes: list[str] = field(default_factory=list)
    match_ended: dict[str, Any] | None = None
    """The ``match_ended`` event, if this round ended the match."""
    seats: int = 0
    """Seats of the match."""

    @property
    def ok(self) -> bool:
        """Whether every check passed."""
        return self.failure is None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "round_id": self.round_id,
            "number": self.number,
            "ok": self.ok,
            "failure": None if self.failure is None else self.failure.to_dict(),
            "notes": list(self.notes),
        }


def first_difference(expected: Mapping[str, Any], found: Mapping[str, Any]) -> str:
    """The first key (in sorted order) whose values differ, with both values, for a reason."""
    for key in sorted(set(expected) | set(found)):
        if expected.get(key, ...) != found.get(key, ...):
            return f"{key}: expected {expected.get(key)!r:.80}, found {found.get(key)!r:.80}"
    return "no field differs"
