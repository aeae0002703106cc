"""Rule options (RULES.md §1-§3) as one frozen dataclass, and the named presets.

A table records its preset and the option values it resolved to (``RummyOptions.to_dict``);
``resolve_options`` applies overrides to a preset and validates everything at once, raising
``GameError`` with ``unknown_preset``, ``unknown_option`` or ``invalid_option_value``.
Only the ``cacheta-raiz`` ruleset is playable by :mod:`app.games.cacheta` today; the other
rummy presets are defined so tables and the solver can already name them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.games.cards import WILD_SCOPES
from app.games.errors import GameError

__all__ = (
    "FIRST_DEALER_MODES",
    "MELD_SHAPES",
    "PRESETS",
    "RULESETS",
    "RummyOptions",
    "decks_for_players",
    "resolve_options",
)

MELD_SHAPES = ("three_threes", "any")
"""Values of ``meld_shape``."""
RULESETS = ("cacheta-raiz", "pife-classic", "cacheta-classic", "pife-casual", "cacheta-casual")
"""Game logics (one per rummy preset family); only ``cacheta-raiz`` is playable now."""
TEN_CARD_RULESETS = ("pife-classic", "cacheta-classic")
"""RULES.md §2: 9 cards per player, or 10 in the classic presets."""
FIRST_DEALER_MODES = ("drawn", "creator")
"""``drawn``: a ``first_dealer`` chance input picks seat 0..n-1; ``creator``: seat 0 deals."""
MAX_LIVES = 20
"""Upper bound of the ``lives`` option."""
MAX_SEATS = 10
"""Most seats any rummy preset allows."""
MIN_TIMER_MS = 10
"""Lower bound of every timer option (test deployments shorten timers; see the README)."""
MAX_TIMER_MS = 7 * 24 * 3600 * 1000
"""Upper bound of every timer option (a week)."""


@dataclass(frozen=True, slots=True)
class RummyOptions:
    """Every option of the rummy presets; defaults are ``cacheta-raiz``."""

    ruleset: str = "cacheta-raiz"
    """Which game logic runs the table (see :data:`RULESETS`)."""
    meld_shape: str = "three_threes"
    """``three_threes``: close with exactly three melds of three; ``any``: melds of 3+."""
    ace_high: bool = True
    """Ace may also follow the king (Q-K-A); never wraps (K-A-2)."""
    set_same_suit_allowed: bool = False
    """Variant: a set may repeat a suit (identical cards in one set); size stays 3+."""
    wild_cards: bool = True
    """A vira is turned after the deal and defines wild cards (Cacheta presets)."""
    wild_scope: str = "same_suit"
    """``same_suit``, ``same_color`` or ``all_suits``: which next-rank cards are wild."""
    wilds_per_meld: int = 1
    """Most *substituting* wilds in one meld (natural-position wilds do not count)."""
    wild_from_discard_is_plain: bool = False
    """A wild taken from the discard pile counts as its natural card for its taker."""
    full_close_allowed: bool = False
    """Closing with every card in melds and no discard ("bater com 10")."""
    hand_size: int = 9
    """Cards dealt to each player (9 or 10)."""
    discard_lock_identical: bool = False
    """The identical twins of a card taken from the discard pile are locked too."""
    restricted_discard_draw: bool = False
    """The discard top may be taken only if it forms a meld with two cards of the hand."""
    max_reshuffles: int | None = None
    """Reshuffles per round; ``None`` = unlimited; when exceeded the round ends drawn."""
    min_players: int = 2
    """Fewest seats a table may start with."""
    max_players: int = 10
    """Most seats a table may have."""
    decks_by_players: tuple[tuple[int, int], ...] = ((5, 2), (10, 4))
    """``(up_to_players, decks)`` steps: 2 decks up to 5 players, 4 above."""
    lives: int = 7
    """Lives each player starts with (1..20)."""
    first_dealer: str = "drawn"
    """How the first dealer is chosen (see :data:`FIRST_DEALER_MODES`)."""
    mandar_correr: bool = True
    """Players choose mandar/correr after the deal (§3)."""
    out_of_turn_claims: bool = True
    """Claim window after each discard and *bater fora da vez* (§3)."""
    decision_timeout_ms: int = 30_000
    """Milliseconds to choose mandar/correr (non-dealers together, then the dealer)."""
    turn_timeout_ms: int = 25_000
    """Milliseconds for a whole turn (draw and discard)."""
    claim_window_ms: int = 3_000
    """Milliseconds of the claim window after each discard."""
    abandon_after_ms: int = 600_000
    """Milliseconds a frozen table waits before the connected player wins."""

    def __post_init__(self) -> None:
        _validate(self)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict of every option (what a table records)."""
        result: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "decks_by_players":
                value = [list(step) for step in value]
            result[field.name] = value
        return result

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RummyOptions:
        """Rebuild (and validate) options recorded by :meth:`to_dict`."""
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise GameError(
                "unknown_option", f"unknown option {unknown[0]!r}", {"option": unknown[0]}
            )
        values = {name: coerce_option_value(name, value) for name, value in data.items()}
        return cls(**values)

    def decks_for(self, players: int) -> int:
        """Number of packs for a table of ``players`` seats."""
        return decks_for_players(self, players)


def decks_for_players(options: RummyOptions, players: int) -> int:
    """Number of packs shuffled together for ``players`` seats (the ``decks_by_players`` rule)."""
    for up_to, decks in options.decks_by_players:
        if players <= up_to:
            return decks
    raise GameError(
        "invalid_seat_count",
        f"{players} players is more than the decks rule covers",
        {"players": players},
    )


def _invalid(name: str, value: Any, why: str) -> GameError:
    return GameError(
        "invalid_option_value", f"option {name}={value!r}: {why}", {"option": name, "value": value}
    )


_BOOL_WORDS = {"true": True, "1": True, "yes": True, "on": True}
_BOOL_WORDS |= {"false": False, "0": False, "no": False, "off": False}
_FIELD_TYPES = {field.name: str(field.type) for field in dataclasses.fields(RummyOptions)}


def coerce_option_value(name: str, value: Any) -> Any:
    """Turn a JSON or command-line value into the option's type (strings are parsed)."""
    kind = _FIELD_TYPES.get(name)
    if kind is None:
        raise GameError("unknown_option", f"unknown option {name!r}", {"option": name})
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _BOOL_WORDS:
            return _BOOL_WORDS[value.strip().lower()]
        raise _invalid(name, value, "expected true or false")
    if kind in ("int", "int | None"):
        if kind == "int | None" and (
            value is None
            or (isinstance(value, str) and value.strip().lower() in ("none", "unlimited"))
        ):
            return None
        if isinstance(value, bool):
            raise _invalid(name, value, "expected an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value.strip())
        raise _invalid(name, value, "expected an integer")
    if kind == "str":
        if isinstance(value, str):
            return value.strip()
        raise _invalid(name, value, "expected a string")
    return _coerce_decks_rule(name, value)


def _coerce_decks_rule(name: str, value: Any) -> tuple[tuple[int, int], ...]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise _invalid(name, value, "expected JSON like [[5, 2], [10, 4]]") from None
    if not isinstance(value, list | tuple):
        raise _invalid(name, value, "expected a list of [up_to_players, decks]")
    steps = []
    for step in value:
        if (
            not isinstance(step, list | tuple)
            or len(step) != 2
            or not all(isinstance(part, int) and not isinstance(part, bool) for part in step)
        ):
            raise _invalid(name, value, "each step is [up_to_players, decks]")
        steps.append((int(step[0]), int(step[1])))
    return tuple(steps)


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not (low <= value <= high):
        raise _invalid(name, value, f"must be between {low} and {high}")


def _validate(options: RummyOptions) -> None:
    for name, allowed in (
        ("ruleset", RULESETS),
        ("meld_shape", MELD_SHAPES),
        ("wild_scope", WILD_SCOPES),
        ("first_dealer", FIRST_DEALER_MODES),
    ):
        if getattr(options, name) not in allowed:
            raise _invalid(name, getattr(options, name), f"one of {', '.join(allowed)}")
    _check_range("wilds_per_meld", options.wilds_per_meld, 0, 4)
    _check_range("hand_size", options.hand_size, 9, 10)
    _check_range("lives", options.lives, 1, MAX_LIVES)
    _check_range("min_players", options.min_players, 2, MAX_SEATS)
    _check_range("max_players", options.max_players, options.min_players, MAX_SEATS)
    for name in ("decision_timeout_ms", "turn_timeout_ms", "claim_window_ms", "abandon_after_ms"):
        _check_range(name, getattr(options, name), MIN_TIMER_MS, MAX_TIMER_MS)
    if options.max_reshuffles is not None:
        _check_range("max_reshuffles", options.max_reshuffles, 0, 1000)
    if options.meld_shape == "three_threes" and options.hand_size != 9:
        raise _invalid("hand_size", options.hand_size, "three_threes closes exactly 9 cards")
    if options.hand_size != 9 and options.ruleset not in TEN_CARD_RULESETS:
        raise _invalid("hand_size", options.hand_size, "10 cards only in the classic presets")
    steps = options.decks_by_players
    if not steps or any(
        decks < 1 or decks > 8 or up_to < 2 or (index and up_to <= steps[index - 1][0])
        for index, (up_to, decks) in enumerate(steps)
    ):
        raise _invalid("decks_by_players", steps, "increasing [up_to_players, 1..8 decks] steps")
    if steps[-1][0] < options.max_players:
        raise _invalid("decks_by_players", steps, "must cover max_players")
    for up_to, decks in steps:
        # every player needs a hand, plus the vira and at least one card to draw
        if min(up_to, options.max_players) * options.hand_size + 2 > 52 * decks:
            raise _invalid("decks_by_players", steps, f"{decks} decks are too few for {up_to}")


PRESETS: dict[str, RummyOptions] = {
    "cacheta-raiz": RummyOptions(),
    "pife-classic": RummyOptions(
        ruleset="pife-classic",
        meld_shape="any",
        wild_cards=False,
        full_close_allowed=True,
        max_reshuffles=3,
        max_players=4,
        decks_by_players=((2, 1), (4, 2)),
        lives=1,
        mandar_correr=False,
        out_of_turn_claims=False,
    ),
    "cacheta-classic": RummyOptions(
        ruleset="cacheta-classic",
        meld_shape="any",
        full_close_allowed=True,
        max_reshuffles=3,
        max_players=4,
        decks_by_players=((4, 2),),
        lives=10,
        mandar_correr=False,
        out_of_turn_claims=False,
    ),
    "pife-casual": RummyOptions(
        ruleset="pife-casual",
        meld_shape="any",
        wild_cards=False,
        full_close_allowed=True,
        discard_lock_identical=True,
        max_players=4,
        decks_by_players=((4, 2),),
        lives=1,
        first_dealer="creator",
        mandar_correr=False,
        out_of_turn_claims=False,
    ),
    "cacheta-casual": RummyOptions(
        ruleset="cacheta-casual",
        meld_shape="any",
        wild_from_discard_is_plain=True,
        full_close_allowed=True,
        discard_lock_identical=True,
        max_players=4,
        decks_by_players=((4, 2),),
        first_dealer="creator",
        mandar_correr=False,
        out_of_turn_claims=False,
    ),
}
"""Named, immutable option sets (RULES.md presets; Truco is not a rummy preset)."""


def resolve_options(preset: str, overrides: Mapping[str, Any] | None = None) -> RummyOptions:
    """The preset's options with ``overrides`` applied (values may be strings), validated."""
    base = PRESETS.get(preset)
    if base is None:
        raise GameError("unknown_preset", f"unknown preset {preset!r}", {"preset": preset})
    values = base.to_dict()
    for name, value in (overrides or {}).items():
        values[name] = coerce_option_value(name, value)
    return RummyOptions.from_dict(values)
