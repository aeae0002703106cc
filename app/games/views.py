"""What each viewer may see: a player's view, a spectator's view, the compliance view, and
the per-viewer redaction of the event feed.

A player sees its own hand and public information; a spectator sees public information only.
Hidden: other hands, the stock order, the card drawn from the stock, decisions until the
dealer has decided (the dealer sees only the *count* of mandar while deciding), claims until
the window closes. Public: card counts, the discard pile, vira and wild cards, lives, marra,
eliminations, the card taken from the discard pile, burned players, closers' melds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from app.games.events import (
    Claimed,
    DealerDecisionStarted,
    Dealt,
    DecisionMade,
    DrewStock,
    Event,
    Reshuffled,
)
from app.games.solver import find_close, has_two_disjoint_melds
from app.games.state import PLAY_PHASES, RoundState

if TYPE_CHECKING:
    from app.games.cacheta import CachetaMatch

__all__ = (
    "CARD_FIELDS",
    "LazyPlayerView",
    "LazyRoundView",
    "StaleViewError",
    "bot_view",
    "full_view",
    "player_view",
    "spectator_view",
    "visible_event",
    "visible_events",
)

CARD_FIELDS = frozenset(
    {
        "hand",
        "hands",
        "pile",
        "stock",
        "card",
        "vira",
        "melds",
        "discard",
        "kept",
        "drawn",
        "locked",
        "plain_wilds",
        "claimed_card",
        "taken_from_pile",
    }
)
"""Keys of views and visible events whose values are card ids (``wilds`` is derived from the
vira and lists every wild id of the shoe, so it is not a holding)."""


def _deadline(match: CachetaMatch, full: bool) -> dict[str, Any] | None:
    deadline = match.current_deadline()
    if deadline is None:
        return None
    result: dict[str, Any] = {
        "kind": deadline.kind,
        "duration_ms": deadline.duration_ms,
        "token": deadline.token,
    }
    # who has not decided yet is not public while the decisions are secret
    if full or deadline.kind in ("turn", "dealer_decision"):
        result["seats"] = list(deadline.seats)
    return result


def _public(match: CachetaMatch, full: bool = False) -> dict[str, Any]:
    request = match.pending_chance()
    view: dict[str, Any] = {
        "seats": match.seats,
        "decks": match.decks,
        "options": match.options_dict,
        "lives": list(match.lives),
        "marra": [lives == 1 for lives in match.lives],
        "eliminated": [lives == 0 for lives in match.lives],
        "dealer": match.dealer,
        "round_number": match.round_number,
        "over": match.over,
        "winner": match.winner,
        "placements": [list(pair) for pair in match.placements] if match.placements else None,
        "waiting_for_chance": request.kind if request else None,
        "deadline": _deadline(match, full),
        "last_result": match.last_result,
        "round": None,
    }
    current = match.round
    if current is None:
        return view
    revealed = current.phase in PLAY_PHASES
    view["round"] = {
        "number": current.number,
        "dealer": current.dealer,
        "phase": current.phase,
        "seats": list(current.seats),
        "hand_counts": [[seat, len(current.hands.get(seat, ()))] for seat in current.seats],
        "stock_count": len(current.stock),
        "pile": list(current.pile),
        "vira": current.vira,
        "wilds": sorted(current.wilds),
        "decisions": (
            [[seat, current.decisions[seat]] for seat in sorted(current.decisions)]
            if revealed
            else None
        ),
        "players": list(current.players) if revealed else None,
        "turn": current.turn if revealed else None,
        "turn_number": current.turns,
        "taken_from_pile": current.drawn if current.drawn_from_pile else None,
        "burned": sorted(current.burned),
        "claim_window": (
            {"discarder": current.turn, "card": current.pile[-1]}
            if current.phase == "claim_window"
            else None
        ),
        "reshuffles": current.reshuffles,
    }
    return view


def player_view(match: CachetaMatch, seat: int, hints: bool = True) -> dict[str, Any]:
    """What ``seat`` may see. ``hints`` adds ``can_close``/``can_claim`` (runs the solver)."""
    view = _public(match)
    view["you"] = seat
    current = match.round
    if current is None:
        return view
    mine = view["round"]
    hand = current.hands.get(seat, [])
    mine["hand"] = list(hand)
    # only the plain wilds in hand: the others' places are not this player's to see
    mine["plain_wilds"] = sorted(current.plain.get(seat, set()).intersection(hand))
    mine["my_decision"] = current.decisions.get(seat)
    if current.phase == "dealer_deciding" and seat == current.dealer:
        mine["mandar_count"] = sum(current.decisions.values())
    in_turn = current.phase == "discard" and current.turn == seat
    mine["drawn"] = current.drawn if in_turn else None
    mine["locked"] = sorted(current.locked.intersection(hand)) if in_turn else []
    mine["claimed"] = current.phase == "claim_window" and seat in current.claims
    if hints:
        wilds = current.wilds_for(seat)
        mine["can_close"] = in_turn and (
            find_close(hand, wilds, match.rules, current.locked) is not None
        )
        mine["holds_two_melds"] = (
            seat in current.players and has_two_disjoint_melds(hand, wilds, match.rules)
            if len(hand) >= 6
            else False
        )
    return view


class StaleViewError(RuntimeError):
    """A lazy view was read after the match moved on (a bug in the driver)."""


class _LazyDict(dict[str, Any]):
    """A dict of which some values (``LAZY``) are computed from the match on first read.

    Reading a key (``view[key]``, ``get``, ``in``) computes at most that value; anything that
    uses the whole dict (iteration, length, comparison, copy, pickling, mutation) first
    computes every value, in ``ORDER``, so the dict is then the plain one. Computing a value
    after the match has moved on raises :class:`StaleViewError`: a view is of one moment.
    """

    __slots__ = ("_match", "_pending", "_seat", "_steps")
    ORDER: ClassVar[tuple[str, ...]] = ()
    """Every key, in the order of the plain dict."""
    LAZY: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}
    """The keys computed on first read, with how to compute them (``compute(view)``)."""

    def __init__(self, match: CachetaMatch, seat: int, eager: dict[str, Any]) -> None:
        # (the subclasses do this inline, with the eager values as keywords: one call less)
        dict.__init__(self, eager)
        self._match = match
        self._seat = seat
        self._steps = match.steps
        self._pending = True
        """Whether some ``LAZY`` value may not be computed yet."""

    def _present(self, key: str) -> bool:
        """Whether the optional ``key`` is part of this view (every key by default)."""
        return True

    def __missing__(self, key: str) -> Any:
        compute = self.LAZY.get(key)
        if compute is None or not self._pending or not self._present(key):
            raise KeyError(key)
        if self._match.steps != self._steps:
            raise StaleViewError("the match has changed since this view was built")
        value = compute(self)
        dict.__setitem__(self, key, value)
        return value

    def _complete(self) -> None:
        if self._pending:
            items = [(key, self[key]) for key in self.ORDER if self._present(key)]
            self._pending = False
            dict.clear(self)
            dict.update(self, items)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        return self._pending and key in self.LAZY and self._present(str(key))

    def __eq__(self, other: object) -> bool:
        self._complete()
        if isinstance(other, _LazyDict):
            other._complete()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = dict.__hash__  # None: a dict is not hashable

    def __reduce__(self) -> tuple[type[dict[str, Any]], tuple[dict[str, Any]]]:
        self._complete()
        return dict, (dict(self),)  # copies and pickles are plain dicts


def _completing(name: str) -> Any:
    plain = getattr(dict, name)

    def method(self: _LazyDict, *args: Any, **kwargs: Any) -> Any:
        self._complete()
        return plain(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


for _name in (
    "__iter__",
    "__len__",
    "__repr__",
    "__reversed__",
    "__or__",
    "__ror__",
    "__ior__",
    "__setitem__",
    "__delitem__",
    "clear",
    "copy",
    "items",
    "keys",
    "pop",
    "popitem",
    "setdefault",
    "update",
    "values",
):
    setattr(_LazyDict, _name, _completing(_name))


class LazyPlayerView(_LazyDict):
    """``player_view(match, seat, hints=False)``, its costlier values computed on first read.

    It is a dict equal to that view (key order included, once complete), so whoever reads it
    sees exactly the player view and nothing more; values nobody reads are never computed.
    Its ``round`` is a :class:`LazyRoundView`.
    """

    __slots__ = ()
    ORDER = (
        "seats",
        "decks",
        "options",
        "lives",
        "marra",
        "eliminated",
        "dealer",
        "round_number",
        "over",
        "winner",
        "placements",
        "waiting_for_chance",
        "deadline",
        "last_result",
        "round",
        "you",
    )
    LAZY: ClassVar[Mapping[str, Callable[[LazyPlayerView], Any]]] = {
        # (bots read "round", "over", "waiting_for_chance", "options" on every decision, the
        # rest seldom or never)
        "seats": lambda view: view._match.seats,
        "lives": lambda view: list(view._match.lives),
        "marra": lambda view: [lives == 1 for lives in view._match.lives],
        "eliminated": lambda view: [lives == 0 for lives in view._match.lives],
        "placements": lambda view: (
            [list(pair) for pair in view._match.placements] if view._match.placements else None
        ),
        "deadline": lambda view: _deadline(view._match, False),
        "dealer": lambda view: view._match.dealer,
        "round_number": lambda view: view._match.round_number,
        "winner": lambda view: view._match.winner,
        "last_result": lambda view: view._match.last_result,
        "you": lambda view: view._seat,
    }

    def __init__(self, match: CachetaMatch, seat: int) -> None:
        # _LazyDict.__init__, inline
        dict.__init__(
            self,
            decks=match.decks,
            options=match.options_dict,
            over=match.over,
            waiting_for_chance=_waiting_for_chance(match),
            round=None if match.round is None else LazyRoundView(match, seat, match.round),
        )
        self._match = match
        self._seat = seat
        self._steps = match.steps
        self._pending = True


def _waiting_for_chance(match: CachetaMatch) -> str | None:
    request = match.pending_chance()
    return request.kind if request else None


class LazyRoundView(_LazyDict):
    """The ``round`` of a :class:`LazyPlayerView`: ``current`` as ``seat`` may see it."""

    __slots__ = ("_round",)
    _round: RoundState
    ORDER = (
        "number",
        "dealer",
        "phase",
        "seats",
        "hand_counts",
        "stock_count",
        "pile",
        "vira",
        "wilds",
        "decisions",
        "players",
        "turn",
        "turn_number",
        "taken_from_pile",
        "burned",
        "claim_window",
        "reshuffles",
        "hand",
        "plain_wilds",
        "my_decision",
        "mandar_count",
        "drawn",
        "locked",
        "claimed",
    )
    LAZY: ClassVar[Mapping[str, Callable[[LazyRoundView], Any]]] = {
        "number": lambda view: view._round.number,
        "seats": lambda view: list(view._round.seats),
        "stock_count": lambda view: len(view._round.stock),
        "pile": lambda view: list(view._round.pile),
        "vira": lambda view: view._round.vira,
        "turn_number": lambda view: view._round.turns,
        "taken_from_pile": lambda view: view._round.drawn if view._round.drawn_from_pile else None,
        "reshuffles": lambda view: view._round.reshuffles,
        "hand_counts": lambda view: [
            [seat, len(view._round.hands.get(seat, ()))] for seat in view._round.seats
        ],
        "decisions": lambda view: (
            [[seat, view._round.decisions[seat]] for seat in sorted(view._round.decisions)]
            if view._round.phase in PLAY_PHASES
            else None
        ),
        "players": lambda view: (
            list(view._round.players) if view._round.phase in PLAY_PHASES else None
        ),
        "claim_window": lambda view: (
            {"discarder": view._round.turn, "card": view._round.pile[-1]}
            if view._round.phase == "claim_window"
            else None
        ),
        "mandar_count": lambda view: sum(view._round.decisions.values()),
        # (read by bots in the decision phases only)
        "dealer": lambda view: view._round.dealer,
        "my_decision": lambda view: view._round.decisions.get(view._seat),
    }

    def __init__(self, match: CachetaMatch, seat: int, current: RoundState) -> None:
        self._round = current
        revealed = current.phase in PLAY_PHASES
        in_turn = current.phase == "discard" and current.turn == seat
        hand = list(current.hands.get(seat, ()))
        plain = current.plain.get(seat)
        # _LazyDict.__init__, inline
        dict.__init__(
            self,
            phase=current.phase,
            wilds=sorted(current.wilds),
            turn=current.turn if revealed else None,
            burned=sorted(current.burned) if current.burned else [],
            hand=hand,
            # only the plain wilds in hand: the others' places are not this player's to see
            plain_wilds=sorted(plain.intersection(hand)) if plain else [],
            drawn=current.drawn if in_turn else None,
            locked=sorted(current.locked.intersection(hand)) if in_turn and current.locked else [],
            claimed=current.phase == "claim_window" and seat in current.claims,
        )
        self._match = match
        self._seat = seat
        self._steps = match.steps
        self._pending = True

    def _present(self, key: str) -> bool:
        if key == "mandar_count":
            return self._round.phase == "dealer_deciding" and self._seat == self._round.dealer
        return True


def bot_view(match: CachetaMatch, seat: int) -> LazyPlayerView:
    """What a bot of ``seat`` sees: ``player_view(match, seat, hints=False)``, built lazily
    (read it before the match changes: a stale read raises :class:`StaleViewError`)."""
    return LazyPlayerView(match, seat)


def spectator_view(match: CachetaMatch) -> dict[str, Any]:
    """Public information only."""
    return _public(match)


def full_view(match: CachetaMatch) -> dict[str, Any]:
    """Everything (compliance): every hand, the stock order, secret decisions and claims."""
    view = _public(match, full=True)
    current = match.round
    if current is not None:
        view["round"] |= {
            "hands": [[seat, list(cards)] for seat, cards in sorted(current.hands.items())],
            "stock": current.stock_top_first(),
            "decisions": [[seat, current.decisions[seat]] for seat in sorted(current.decisions)],
            "timed_out": list(current.timed_out),
            "players": list(current.players),
            "turn": current.turn,
            "drawn": current.drawn,
            "locked": sorted(current.locked),
            "plain_wilds": [[seat, sorted(cards)] for seat, cards in sorted(current.plain.items())],
            "claims": list(current.claims),
        }
    view["steps"] = match.steps
    view["state_hash"] = match.state_hash()
    return view


def visible_event(event: Event, viewer: int | None) -> dict[str, Any] | None:
    """The event as ``viewer`` (a seat, or ``None`` for a spectator) may see it, or ``None``."""
    data = event.to_dict()
    if isinstance(event, Dealt):
        hands = data.pop("hands")
        data.pop("stock")
        data["stock_count"] = len(event.stock)
        data["hand_counts"] = [len(hand) for hand in hands]
        data["hand"] = hands[event.seats.index(viewer)] if viewer in event.seats else None
    elif isinstance(event, DecisionMade | Claimed):
        return data if viewer == event.seat else None
    elif isinstance(event, DealerDecisionStarted):
        if viewer != event.dealer:
            data.pop("mandar_count")
    elif isinstance(event, DrewStock):
        if viewer != event.seat:
            data.pop("card")
    elif isinstance(event, Reshuffled):
        data["stock_count"] = len(data.pop("stock"))
    return data


def visible_events(events: Iterable[Event], viewer: int | None) -> list[dict[str, Any]]:
    """The feed of ``viewer``: redacted events, private ones of others left out."""
    feed = []
    for event in events:
        data = visible_event(event, viewer)
        if data is not None:
            feed.append(data)
    return feed
