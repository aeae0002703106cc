"""The pure rules engine of the rummy games (RULES.md §1-§3; preset ``cacheta-raiz``).

No I/O, no clock, no global randomness: chance arrives as explicit inputs
(``CachetaMatch.pending_chance`` / ``apply_chance``) and time as actions (``timeout``).
The same inputs always give the same events. See ``docs/rules-engine.md``.
"""

from __future__ import annotations

from app.native import prefer_native

prefer_native(__name__, __path__)  # the compiled bot, when it is built from these sources

from app.games.actions import (
    ACTION_TYPES,
    AbandonWin,
    Action,
    ChanceInput,
    Claim,
    ClaimWindowClosed,
    Close,
    Decide,
    Discard,
    DrawDiscard,
    DrawStock,
    Timeout,
    action_from_dict,
)
from app.games.bots import HeuristicBot
from app.games.cacheta import CachetaMatch, new_match, replay, restore
from app.games.cards import (
    Card,
    card_deck,
    card_face,
    card_id,
    card_rank,
    card_str,
    card_suit,
    deck_ids,
    identical_ids,
    parse_card,
    parse_cards,
    wild_faces,
    wild_ids,
)
from app.games.errors import ERROR_CODES, GameError
from app.games.events import EVENT_TYPES, Event, canonical_bytes, event_from_dict
from app.games.melds import MeldRules, is_valid_meld
from app.games.options import PRESETS, RummyOptions, decks_for_players, resolve_options
from app.games.simulate import (
    ChanceSource,
    ChanceSourceFactory,
    SimulationReport,
    play_match,
    simulate,
    stand_in_chance_factory,
    stream_chance_factory,
)
from app.games.solver import (
    CloseResult,
    can_close,
    closing_discards,
    find_close,
    has_two_disjoint_melds,
)
from app.games.state import ChanceRequest, Deadline
from app.games.views import (
    full_view,
    player_view,
    spectator_view,
    visible_event,
    visible_events,
)

__all__ = (
    "ACTION_TYPES",
    "ERROR_CODES",
    "EVENT_TYPES",
    "PRESETS",
    "AbandonWin",
    "Action",
    "CachetaMatch",
    "Card",
    "ChanceInput",
    "ChanceRequest",
    "ChanceSource",
    "ChanceSourceFactory",
    "Claim",
    "ClaimWindowClosed",
    "Close",
    "CloseResult",
    "Deadline",
    "Decide",
    "Discard",
    "DrawDiscard",
    "DrawStock",
    "Event",
    "GameError",
    "HeuristicBot",
    "MeldRules",
    "RummyOptions",
    "SimulationReport",
    "Timeout",
    "action_from_dict",
    "can_close",
    "canonical_bytes",
    "card_deck",
    "card_face",
    "card_id",
    "card_rank",
    "card_str",
    "card_suit",
    "closing_discards",
    "deck_ids",
    "decks_for_players",
    "event_from_dict",
    "find_close",
    "full_view",
    "has_two_disjoint_melds",
    "identical_ids",
    "is_valid_meld",
    "new_match",
    "parse_card",
    "parse_cards",
    "play_match",
    "player_view",
    "replay",
    "resolve_options",
    "restore",
    "simulate",
    "spectator_view",
    "stand_in_chance_factory",
    "stream_chance_factory",
    "visible_event",
    "visible_events",
    "wild_faces",
    "wild_ids",
)
