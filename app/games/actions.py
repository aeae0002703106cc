"""Input records: everything that can change a match, as frozen, JSON-able dataclasses.

Players' actions carry their seat; ``Timeout``, ``ClaimWindowClosed`` and ``AbandonWin`` come
from the service's timers; ``ChanceInput`` carries the values drawn by ``rng/``. A match is
exactly the replay of its input records (``CachetaMatch.apply``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, ClassVar

from app.games.errors import GameError
from app.games.events import field_names, record_to_dict

__all__ = (
    "ACTION_TYPES",
    "AbandonWin",
    "Action",
    "ChanceInput",
    "Claim",
    "ClaimWindowClosed",
    "Close",
    "Decide",
    "Discard",
    "DrawDiscard",
    "DrawStock",
    "Timeout",
    "action_from_dict",
)


@dataclass(frozen=True, slots=True)
class Action:
    """Base of every input record; ``type`` names it."""

    type: ClassVar[str] = "action"

    def to_dict(self) -> dict[str, Any]:
        """``{"type": ..., fields...}`` (lists for tuples)."""
        return record_to_dict(self)

    def arguments(self) -> tuple[Any, ...]:
        """The field values in order: the arguments of the match method named ``type``."""
        cls = type(self)
        getter = _ARGUMENT_GETTERS.get(cls)
        if getter is None:
            getter = _ARGUMENT_GETTERS[cls] = _argument_getter(field_names(cls))
        return getter(self)


def _argument_getter(names: tuple[str, ...]) -> Callable[[Action], tuple[Any, ...]]:
    if not names:
        return lambda _record: ()
    if len(names) == 1:
        only = attrgetter(names[0])
        return lambda record: (only(record),)
    getter: Callable[[Action], tuple[Any, ...]] = attrgetter(*names)
    return getter


_ARGUMENT_GETTERS: dict[type[Action], Callable[[Action], tuple[Any, ...]]] = {}
"""Per input class: a function returning its field values in order."""


@dataclass(frozen=True, slots=True)
class Decide(Action):
    """Choose mandar (``True``: play the round) or correr (``False``: run)."""

    type: ClassVar[str] = "decide"
    seat: int
    """Deciding seat."""
    mandar: bool
    """Play (True) or run (False)."""


@dataclass(frozen=True, slots=True)
class DrawStock(Action):
    """Draw the top card of the stock."""

    type: ClassVar[str] = "draw_stock"
    seat: int
    """Seat in turn."""


@dataclass(frozen=True, slots=True)
class DrawDiscard(Action):
    """Take the top card of the discard pile."""

    type: ClassVar[str] = "draw_discard"
    seat: int
    """Seat in turn."""


@dataclass(frozen=True, slots=True)
class Discard(Action):
    """Discard a card of the hand, face up."""

    type: ClassVar[str] = "discard"
    seat: int
    """Seat in turn."""
    card: int
    """Card id to discard."""


@dataclass(frozen=True, slots=True)
class Close(Action):
    """Close (bater) after drawing; the server finds the partition/discard when not given."""

    type: ClassVar[str] = "close"
    seat: int
    """Seat in turn."""
    partition: tuple[tuple[int, ...], ...] | None = None
    """The melds as card ids, or ``None`` to let the server find them."""
    discard: int | None = None
    """The closing discard, or ``None`` (server's choice, or full close)."""


@dataclass(frozen=True, slots=True)
class Claim(Action):
    """Claim the discard during the claim window (bater fora da vez)."""

    type: ClassVar[str] = "claim"
    seat: int
    """Claiming seat."""


@dataclass(frozen=True, slots=True)
class Timeout(Action):
    """The current deadline passed; ``token`` (when given) must match it."""

    type: ClassVar[str] = "timeout"
    token: int | None = None
    """``Deadline.token`` the timer was started for; a stale token is refused."""


@dataclass(frozen=True, slots=True)
class ClaimWindowClosed(Action):
    """The claim window's 3 seconds are over: resolve the claims."""

    type: ClassVar[str] = "claim_window_closed"


@dataclass(frozen=True, slots=True)
class AbandonWin(Action):
    """A frozen table's abandon deadline passed: the connected ``seat`` wins the match."""

    type: ClassVar[str] = "abandon_win"
    seat: int
    """The only connected seat still alive."""


@dataclass(frozen=True, slots=True)
class ChanceInput(Action):
    """A value drawn by ``rng/`` answering ``pending_chance()``."""

    type: ClassVar[str] = "chance"
    kind: str
    """``first_dealer``, ``deal`` or ``reshuffle``."""
    round: int
    """Round number of the request."""
    label: str
    """RNG stream label of the request."""
    value: int | tuple[int, ...]
    """A seat index (``first_dealer``) or a permutation of ``range(size)``."""


ACTION_TYPES: dict[str, type[Action]] = {
    cls.type: cls
    for cls in (
        Decide,
        DrawStock,
        DrawDiscard,
        Discard,
        Close,
        Claim,
        Timeout,
        ClaimWindowClosed,
        AbandonWin,
        ChanceInput,
    )
}
"""Every input record class by its ``type``."""


_INT_ONLY = frozenset({int})
_ALLOWED_KEYS: dict[type[Action], frozenset[str]] = {}
"""Per input class: its field names and ``type`` (the keys its dict may have)."""


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise GameError("invalid_action", f"{name} must be an integer", {"field": name})
    return value


def _optional_int(value: Any, name: str) -> int | None:
    return None if value is None else _int(value, name)


def _partition(value: Any) -> tuple[tuple[int, ...], ...] | None:
    if value is None:
        return None
    if not isinstance(value, list | tuple) or not all(
        isinstance(meld, list | tuple) for meld in value
    ):
        raise GameError("invalid_action", "partition must be a list of lists of card ids")
    return tuple(tuple(_int(card, "partition") for card in meld) for meld in value)


def action_from_dict(data: dict[str, Any]) -> Action:
    """Parse and type-check an input record (``unknown_action`` / ``invalid_action``)."""
    if not isinstance(data, dict):
        raise GameError("invalid_action", "an action is a JSON object")
    kind = data.get("type")
    cls = ACTION_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise GameError("unknown_action", f"unknown action type {kind!r}", {"type": kind})
    names = _ALLOWED_KEYS.get(cls)
    if names is None:
        names = _ALLOWED_KEYS[cls] = frozenset(field_names(cls)) | {"type"}
    if not names.issuperset(data):
        extra = sorted(set(data) - names)
        raise GameError("invalid_action", f"unexpected field {extra[0]!r}", {"field": extra[0]})
    try:
        if cls is Decide:
            if not isinstance(data["mandar"], bool):
                raise GameError("invalid_action", "mandar must be true or false")
            return Decide(_int(data["seat"], "seat"), data["mandar"])
        if cls in (DrawStock, DrawDiscard, Claim, AbandonWin):
            return cls(_int(data["seat"], "seat"))
        if cls is Discard:
            return Discard(_int(data["seat"], "seat"), _int(data["card"], "card"))
        if cls is Close:
            return Close(
                _int(data["seat"], "seat"),
                _partition(data.get("partition")),
                _optional_int(data.get("discard"), "discard"),
            )
        if cls is Timeout:
            return Timeout(_optional_int(data.get("token"), "token"))
        if cls is ClaimWindowClosed:
            return ClaimWindowClosed()
        value = data["value"]
        parsed: int | tuple[int, ...]
        if isinstance(value, list | tuple):
            parsed = tuple(value)
            if not _INT_ONLY.issuperset(map(type, parsed)):  # bools, floats...: checked one by one
                parsed = tuple(_int(item, "value") for item in value)
        else:
            parsed = _int(value, "value")
        if not isinstance(data["kind"], str) or not isinstance(data["label"], str):
            raise GameError("invalid_action", "kind and label must be strings")
        return ChanceInput(data["kind"], _int(data["round"], "round"), data["label"], parsed)
    except KeyError as missing:
        raise GameError(
            "invalid_action", f"missing field {missing.args[0]!r}", {"field": missing.args[0]}
        ) from None
