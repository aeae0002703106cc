"""What each viewer may see: a player's view, a spectator's view, the compliance view, and
the per-viewer redaction of the event feed.

A player sees its own hand and public information; a spectator sees public information only.
Hidden: other hands, the stock order, the card drawn from the stock, decisions until the
dealer has decided (the dealer sees only the *count* of mandar while deciding), claims until
the window closes. Public: card counts, the discard pile, vira and wild cards, lives, marra,
eliminations, the card taken from the discard pile, burned players, closers' melds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

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
from app.games.state import PLAY_PHASES

if TYPE_CHECKING:
    from app.games.cacheta import CachetaMatch

__all__ = (
    "CARD_FIELDS",
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
