"""Event records: the internal truth of a match, card by card.

Every action returns a tuple of these frozen records, each numbered by ``seq`` (0, 1, 2 …
over the whole match). They hold hidden information (the card drawn from the stock, every
hand at the deal, the stock order); :mod:`app.games.views` decides what each viewer may see.
``canonical_bytes`` is the one serialisation used for hashing (sorted keys, no whitespace,
UTF-8, integers only).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from app.games.canonical import canonical_json

__all__ = (
    "EVENT_TYPES",
    "ClaimResolved",
    "ClaimWindowEnded",
    "ClaimWindowOpened",
    "Claimed",
    "Closed",
    "DealerDecisionStarted",
    "Dealt",
    "DecisionMade",
    "DecisionsRevealed",
    "Discarded",
    "DrewDiscard",
    "DrewStock",
    "Eliminated",
    "Event",
    "FirstDealerDrawn",
    "MatchEnded",
    "MatchStarted",
    "Reshuffled",
    "RoundEnded",
    "RoundStarted",
    "TurnStarted",
    "canonical_bytes",
    "event_from_dict",
    "freeze",
    "record_to_dict",
    "to_jsonable",
)


_CONTAINERS = (tuple, list, dict)


def to_jsonable(value: Any) -> Any:
    """Tuples become lists, recursively (dict keys are kept as they are)."""
    if isinstance(value, tuple | list):
        return [to_jsonable(item) if isinstance(item, _CONTAINERS) else item for item in value]
    if isinstance(value, dict):
        return {
            key: to_jsonable(item) if isinstance(item, _CONTAINERS) else item
            for key, item in value.items()
        }
    return value


def canonical_bytes(obj: Any) -> bytes:
    """Canonical JSON (:mod:`app.games.canonical`): sorted keys, no whitespace, UTF-8, no floats."""
    return canonical_json(obj)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def field_names(cls: type) -> tuple[str, ...]:
    """The field names of a record dataclass, in order (computed once per class)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(field.name for field in dataclasses.fields(cls))
    return names


def record_to_dict(record: Any) -> dict[str, Any]:
    """``{"type": record.type, field: value, ...}`` of a record dataclass, lists for tuples."""
    result: dict[str, Any] = {"type": record.type}
    for name in field_names(type(record)):
        value = getattr(record, name)
        result[name] = to_jsonable(value) if isinstance(value, _CONTAINERS) else value
    return result


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every event: ``type`` names it, ``seq`` orders it within the match."""

    type: ClassVar[str] = "event"
    seq: int
    """Position of the event in the match's event list."""

    def to_dict(self) -> dict[str, Any]:
        """``{"type": ..., "seq": ..., fields...}`` with lists for tuples."""
        return record_to_dict(self)


@dataclass(frozen=True, slots=True)
class MatchStarted(Event):
    """A match was created."""

    type: ClassVar[str] = "match_started"
    seats: int
    """Number of seats (players are seat indexes 0..seats-1)."""
    lives: int
    """Lives each seat starts with."""
    decks: int
    """Packs shuffled together for every round."""
    options: tuple[tuple[str, Any], ...]
    """The resolved options as sorted ``(name, value)`` pairs."""


@dataclass(frozen=True, slots=True)
class FirstDealerDrawn(Event):
    """The ``first_dealer`` chance input chose the dealer of round 1."""

    type: ClassVar[str] = "first_dealer_drawn"
    seat: int
    """The first dealer."""


@dataclass(frozen=True, slots=True)
class RoundStarted(Event):
    """A round begins; its deal is the next chance input."""

    type: ClassVar[str] = "round_started"
    round: int
    """Round number, 1-based."""
    dealer: int
    """Dealer seat."""
    seats: tuple[int, ...]
    """Seats dealt in (alive), in deal order: starting after the dealer."""
    lives: tuple[int, ...]
    """Lives of every seat at the start of the round."""


@dataclass(frozen=True, slots=True)
class Dealt(Event):
    """The deal: card ``i`` of the shuffled shoe went to ``seats[i % len(seats)]``."""

    type: ClassVar[str] = "dealt"
    round: int
    """Round number."""
    seats: tuple[int, ...]
    """Seats in deal order."""
    hands: tuple[tuple[int, ...], ...]
    """Each seat's cards (aligned with ``seats``) in the order received. Hidden."""
    vira: int | None
    """The turned card (``None`` without wild cards)."""
    wilds: tuple[int, ...]
    """Every wild card id of the shoe, sorted."""
    stock: tuple[int, ...]
    """The stock after the deal, top first. Hidden."""


@dataclass(frozen=True, slots=True)
class DecisionMade(Event):
    """A seat chose mandar (play) or correr (run). Private until revealed."""

    type: ClassVar[str] = "decision_made"
    round: int
    """Round number."""
    seat: int
    """Deciding seat."""
    mandar: bool
    """True: plays the round; False: runs."""
    by_timeout: bool
    """The server decided on the deadline."""


@dataclass(frozen=True, slots=True)
class DealerDecisionStarted(Event):
    """Every non-dealer has decided; the dealer decides now, seeing only the count."""

    type: ClassVar[str] = "dealer_decision_started"
    round: int
    """Round number."""
    dealer: int
    """Dealer seat."""
    mandar_count: int
    """How many non-dealers chose mandar (shown to the dealer only)."""


@dataclass(frozen=True, slots=True)
class DecisionsRevealed(Event):
    """The dealer decided: everybody's choice becomes public."""

    type: ClassVar[str] = "decisions_revealed"
    round: int
    """Round number."""
    mandar: tuple[int, ...]
    """Seats that play the round, in seat order."""
    ran: tuple[int, ...]
    """Seats that ran, in seat order."""
    by_timeout: tuple[int, ...]
    """Seats whose choice the server made on the deadline."""


@dataclass(frozen=True, slots=True)
class TurnStarted(Event):
    """A turn begins (draw phase)."""

    type: ClassVar[str] = "turn_started"
    round: int
    """Round number."""
    seat: int
    """Seat to play."""
    turn: int
    """Turn number within the round, 1-based."""


@dataclass(frozen=True, slots=True)
class DrewStock(Event):
    """The seat drew the top of the stock. The card is hidden from the others."""

    type: ClassVar[str] = "drew_stock"
    round: int
    """Round number."""
    seat: int
    """Drawing seat."""
    card: int
    """The card drawn."""
    by_timeout: bool
    """The server drew on the deadline."""


@dataclass(frozen=True, slots=True)
class DrewDiscard(Event):
    """The seat took the top of the discard pile (public); the card is locked this turn."""

    type: ClassVar[str] = "drew_discard"
    round: int
    """Round number."""
    seat: int
    """Drawing seat."""
    card: int
    """The card taken."""


@dataclass(frozen=True, slots=True)
class Discarded(Event):
    """The seat discarded a card face up."""

    type: ClassVar[str] = "discarded"
    round: int
    """Round number."""
    seat: int
    """Discarding seat."""
    card: int
    """The card discarded (the new top of the pile)."""
    by_timeout: bool
    """The server discarded on the deadline."""


@dataclass(frozen=True, slots=True)
class ClaimWindowOpened(Event):
    """The claim window opened after a discard (always, even if nobody can claim)."""

    type: ClassVar[str] = "claim_window_opened"
    round: int
    """Round number."""
    discarder: int
    """Seat that discarded."""
    card: int
    """The card that may be claimed."""


@dataclass(frozen=True, slots=True)
class Claimed(Event):
    """A seat claimed the discard. Private until the window closes."""

    type: ClassVar[str] = "claimed"
    round: int
    """Round number."""
    seat: int
    """Claiming seat."""


@dataclass(frozen=True, slots=True)
class ClaimWindowEnded(Event):
    """The claim window closed; the claimants are listed in resolution order."""

    type: ClassVar[str] = "claim_window_ended"
    round: int
    """Round number."""
    discarder: int
    """Seat that discarded."""
    card: int
    """The claimed card."""
    claimants: tuple[int, ...]
    """Claiming seats in priority order (turn order after the discarder)."""
    by_timeout: bool
    """Closed by the deadline (``timeout``) rather than ``claim_window_closed``."""


@dataclass(frozen=True, slots=True)
class ClaimResolved(Event):
    """One claim's outcome: ``closed``, ``burned`` (queimou) or ``not_evaluated``."""

    type: ClassVar[str] = "claim_resolved"
    round: int
    """Round number."""
    seat: int
    """Claiming seat."""
    card: int
    """The claimed card."""
    outcome: str
    """``closed``: this claimant closes; ``burned``: the card did not close their hand;
    ``not_evaluated``: an earlier claimant closed first."""


@dataclass(frozen=True, slots=True)
class Reshuffled(Event):
    """The discard pile minus its top became the new stock."""

    type: ClassVar[str] = "reshuffled"
    round: int
    """Round number."""
    number: int
    """Reshuffle number within the round (the ``reshuffle/<number>`` stream)."""
    stock: tuple[int, ...]
    """New stock, top first. Hidden."""
    kept: int
    """The top card that stayed on the discard pile."""


@dataclass(frozen=True, slots=True)
class Closed(Event):
    """A seat closed (bateu); its melds become public."""

    type: ClassVar[str] = "closed"
    round: int
    """Round number."""
    seat: int
    """Closing seat."""
    melds: tuple[tuple[int, ...], ...]
    """The closer's melds."""
    discard: int | None
    """The closing discard (put on the pile), ``None`` for a full close."""
    full: bool
    """Full close (every card in melds)."""
    out_of_turn: bool
    """Closed by a claim (bater fora da vez)."""
    claimed_card: int | None
    """The discard-pile card taken by the claim, if out of turn."""


@dataclass(frozen=True, slots=True)
class RoundEnded(Event):
    """The round ended; lives were taken (never below zero)."""

    type: ClassVar[str] = "round_ended"
    round: int
    """Round number."""
    result: str
    """``closed``, ``one_left`` (all others ran), ``all_ran`` (annulled) or ``drawn``."""
    winner: int | None
    """The closer, or the one who did not run; ``None`` otherwise."""
    lives_lost: tuple[tuple[int, int], ...]
    """``(seat, lives lost)`` for every seat dealt in, in seat order."""
    lives: tuple[int, ...]
    """Lives of every seat after the round."""


@dataclass(frozen=True, slots=True)
class Eliminated(Event):
    """Seats reached 0 lives this round (they share a placement)."""

    type: ClassVar[str] = "eliminated"
    round: int
    """Round number."""
    seats: tuple[int, ...]
    """Eliminated seats, in seat order."""


@dataclass(frozen=True, slots=True)
class MatchEnded(Event):
    """The match is over."""

    type: ClassVar[str] = "match_ended"
    winner: int
    """The seat that wins the match and the prize."""
    placements: tuple[tuple[int, int], ...]
    """``(seat, place)`` for every seat; simultaneous eliminations share a place."""
    reason: str
    """``last_standing`` or ``abandon`` (the only connected seat of a frozen table)."""


EVENT_TYPES: dict[str, type[Event]] = {
    cls.type: cls
    for cls in (
        MatchStarted,
        FirstDealerDrawn,
        RoundStarted,
        Dealt,
        DecisionMade,
        DealerDecisionStarted,
        DecisionsRevealed,
        TurnStarted,
        DrewStock,
        DrewDiscard,
        Discarded,
        ClaimWindowOpened,
        Claimed,
        ClaimWindowEnded,
        ClaimResolved,
        Reshuffled,
        Closed,
        RoundEnded,
        Eliminated,
        MatchEnded,
    )
}
"""Every event class by its ``type``."""


def freeze(value: Any) -> Any:
    """Lists become tuples, recursively (the inverse of ``to_jsonable`` for events)."""
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    return value


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from :meth:`Event.to_dict` output."""
    cls = EVENT_TYPES[data["type"]]
    values = {field.name: freeze(data[field.name]) for field in dataclasses.fields(cls)}
    return cls(**values)
