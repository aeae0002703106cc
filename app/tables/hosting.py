"""What a table needs from the game it hosts, and the games it can host.

Tables are generic over the game: everything game-specific goes through a
:class:`GameSpec` (options, a new match, restore, views, the event feed, the outcome).
Only ``cacheta`` exists today; Pife and Truco will be further specs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from app.games import cacheta, views
from app.games.events import Event, MatchEnded, RoundEnded, event_from_dict
from app.games.options import PRESETS, RummyOptions, decks_for_players, resolve_options
from app.games.state import ChanceRequest, Deadline

__all__ = ("GAMES", "GameSpec", "HostedMatch", "game_for_preset")


class HostedMatch(Protocol):
    """The driver-facing surface of a match (chance in, inputs in, events out)."""

    @property
    def over(self) -> bool: ...

    @property
    def events(self) -> list[Event]:
        """Events emitted since this object was built or restored."""
        ...

    def pending_chance(self) -> ChanceRequest | None: ...

    def apply_chance(self, value: int | Sequence[int]) -> tuple[Event, ...]: ...

    def apply(self, action: dict[str, Any]) -> tuple[Event, ...]: ...

    def current_deadline(self) -> Deadline | None: ...

    def snapshot(self) -> dict[str, Any]: ...

    def state_hash(self) -> str: ...


@dataclass(frozen=True, slots=True)
class GameSpec:
    """One game a table can host."""

    name: str
    presets: Mapping[str, Any]
    resolve_options: Callable[[str, Mapping[str, Any] | None], Any]
    options_from_dict: Callable[[dict[str, Any]], Any]
    new_match: Callable[[Any, int], HostedMatch]
    restore: Callable[[dict[str, Any]], HostedMatch]
    player_view: Callable[[Any, int], dict[str, Any]]
    spectator_view: Callable[[Any], dict[str, Any]]
    full_view: Callable[[Any], dict[str, Any]]
    visible_events: Callable[[Sequence[Event], int | None], list[dict[str, Any]]]
    event_from_dict: Callable[[dict[str, Any]], Event]
    min_players: Callable[[Any], int]
    max_players: Callable[[Any], int]
    deck_size: Callable[[Any, int], int]
    alive_seats: Callable[[Any], list[int]]
    """Seats still in the match (not eliminated)."""
    player_actions: frozenset[str]
    """Action types a player may send (timers and the service feed the others)."""


def _cacheta_deck_size(options: RummyOptions, players: int) -> int:
    return 52 * decks_for_players(options, players)


def round_ended(events: Sequence[Event]) -> RoundEnded | None:
    """The round-end event of a batch, if the batch ended a round."""
    return next((event for event in events if isinstance(event, RoundEnded)), None)


def match_ended(events: Sequence[Event]) -> MatchEnded | None:
    """The match-end event of a batch, if the batch ended the match."""
    return next((event for event in events if isinstance(event, MatchEnded)), None)


CACHETA = GameSpec(
    name="cacheta",
    presets={name: options for name, options in PRESETS.items() if name.startswith("cacheta-")},
    resolve_options=resolve_options,
    options_from_dict=RummyOptions.from_dict,
    new_match=cacheta.new_match,
    restore=cacheta.restore,
    player_view=views.player_view,
    spectator_view=views.spectator_view,
    full_view=views.full_view,
    visible_events=views.visible_events,
    event_from_dict=event_from_dict,
    min_players=lambda options: options.min_players,
    max_players=lambda options: options.max_players,
    deck_size=_cacheta_deck_size,
    alive_seats=lambda match: [seat for seat in range(match.seats) if match.alive(seat)],
    player_actions=frozenset(action.type for action in cacheta.PLAYER_ACTIONS),
)

GAMES: dict[str, GameSpec] = {"cacheta": CACHETA}
"""Every game tables can host, by name."""

PLAYABLE_PRESETS = frozenset({"cacheta-raiz"})
"""Presets whose full match logic exists (the others are option sets only, for now)."""


def game_for_preset(preset: str) -> GameSpec | None:
    """The game that hosts ``preset``, or None if tables cannot host it yet."""
    if preset not in PLAYABLE_PRESETS:
        return None
    return next((spec for spec in GAMES.values() if preset in spec.presets), None)
