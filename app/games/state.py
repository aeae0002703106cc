"""Match and round state of ``cacheta-raiz``: data, small helpers, snapshot and restore.

The state machine (:mod:`app.games.cacheta`) mutates these objects only after an action has
been fully verified, so a refused action never leaves a trace. ``snapshot()`` is complete
and JSON-able; ``restore(snapshot())`` gives a state whose snapshot is identical.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.games.cards import wild_ids
from app.games.errors import GameError
from app.games.events import Event
from app.games.melds import MeldRules
from app.games.options import RummyOptions

if TYPE_CHECKING:
    from app.games.actions import Action

__all__ = (
    "PLAY_PHASES",
    "SNAPSHOT_VERSION",
    "ChanceRequest",
    "Deadline",
    "MatchCore",
    "RoundState",
)

SNAPSHOT_VERSION = 1
"""Version of the snapshot layout."""
PLAY_PHASES = frozenset({"draw", "discard", "claim_window", "reshuffle"})
"""Round phases in which cards are played."""


@dataclass(frozen=True, slots=True)
class ChanceRequest:
    """A chance input the driver must supply (open_spiel style chance node).

    ``first_dealer``: an int in ``[0, size)`` (a seat). ``deal`` / ``reshuffle``: a permutation
    ``p`` of ``range(size)``; the items (deal: every card id in canonical order; reshuffle: the
    discard pile minus its top, oldest first) become ``[items[p[i]] for i in range(size)]``,
    index 0 being the top of the stock (the first card dealt).
    """

    kind: str
    """``first_dealer``, ``deal`` or ``reshuffle``."""
    round_number: int
    """Round the input belongs to (1-based)."""
    label: str
    """RNG stream label: ``first_dealer``, ``deal``, ``reshuffle/<k>``."""
    size: int
    """``n``: number of seats, or of items to permute."""


@dataclass(frozen=True, slots=True)
class Deadline:
    """The timer the service must run now. The same ``token`` means the same timer."""

    kind: str
    """``decision``, ``dealer_decision``, ``turn`` or ``claim_window``."""
    duration_ms: int
    """Length of the timer in milliseconds (from the options)."""
    token: int
    """Identifies this timer; a timeout carrying an older token is stale."""
    seats: tuple[int, ...]
    """Seats the timer waits for (empty for the claim window)."""


@dataclass(slots=True)
class RoundState:
    """Everything about the round in progress."""

    number: int
    """Round number, 1-based."""
    dealer: int
    """Dealer seat."""
    seats: tuple[int, ...]
    """Seats dealt in (alive at the start), in deal order starting after the dealer."""
    phase: str = "deal"
    """``deal`` (awaiting the deal chance), ``deciding``, ``dealer_deciding``, ``draw``,
    ``discard``, ``claim_window``, ``reshuffle`` (awaiting a reshuffle chance)."""
    hands: dict[int, list[int]] = field(default_factory=dict)
    """Each dealt seat's cards in the order received (runners keep theirs out of play)."""
    stock: list[int] = field(default_factory=list)
    """The stock with its top as the LAST element (so drawing is ``pop()``)."""
    pile: list[int] = field(default_factory=list)
    """The discard pile, oldest first, top last."""
    vira: int | None = None
    """The turned card."""
    wilds: frozenset[int] = frozenset()
    """Every wild card id of the shoe."""
    decisions: dict[int, bool] = field(default_factory=dict)
    """Seat -> mandar (True) / correr (False), as decided so far."""
    timed_out: list[int] = field(default_factory=list)
    """Seats whose decision the server made on the deadline."""
    players: tuple[int, ...] = ()
    """Seats that play the round (chose mandar), in turn order from the first player."""
    turn: int | None = None
    """Seat in turn (or that just discarded, during the claim window)."""
    turns: int = 0
    """Turns started in this round."""
    drawn: int | None = None
    """The card drawn in the current turn."""
    drawn_from_pile: bool = False
    """Whether ``drawn`` came from the discard pile."""
    locked: frozenset[int] = frozenset()
    """Cards that may not be discarded this turn."""
    plain: dict[int, set[int]] = field(default_factory=dict)
    """Seat -> wild cards that count as plain for it (``wild_from_discard_is_plain``)."""
    burned: set[int] = field(default_factory=set)
    """Seats that queimaram this round."""
    claims: list[int] = field(default_factory=list)
    """Seats that claimed in the open claim window (arrival order; resolution uses priority)."""
    reshuffles: int = 0
    """Reshuffles done in this round."""

    def wilds_for(self, seat: int) -> frozenset[int]:
        """The cards that are wild for ``seat``."""
        plain = self.plain.get(seat)
        return self.wilds - plain if plain else self.wilds

    def stock_top_first(self) -> list[int]:
        """The stock, top first."""
        return self.stock[::-1]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, canonical (sets sorted, the stock top first)."""
        return {
            "number": self.number,
            "dealer": self.dealer,
            "seats": list(self.seats),
            "phase": self.phase,
            "hands": [[seat, list(cards)] for seat, cards in sorted(self.hands.items())],
            "stock": self.stock_top_first(),
            "pile": list(self.pile),
            "vira": self.vira,
            "decisions": [[seat, mandar] for seat, mandar in sorted(self.decisions.items())],
            "timed_out": list(self.timed_out),
            "players": list(self.players),
            "turn": self.turn,
            "turns": self.turns,
            "drawn": self.drawn,
            "drawn_from_pile": self.drawn_from_pile,
            "locked": sorted(self.locked),
            "plain": [[seat, sorted(cards)] for seat, cards in sorted(self.plain.items()) if cards],
            "burned": sorted(self.burned),
            "claims": list(self.claims),
            "reshuffles": self.reshuffles,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], options: RummyOptions, decks: int) -> RoundState:
        """Inverse of :meth:`to_dict`."""
        vira = data["vira"]
        wilds = (
            wild_ids(vira, options.wild_scope, decks)
            if vira is not None and options.wild_cards
            else frozenset()
        )
        return cls(
            number=data["number"],
            dealer=data["dealer"],
            seats=tuple(data["seats"]),
            phase=data["phase"],
            hands={seat: list(cards) for seat, cards in data["hands"]},
            stock=list(reversed(data["stock"])),
            pile=list(data["pile"]),
            vira=vira,
            wilds=wilds,
            decisions={seat: mandar for seat, mandar in data["decisions"]},
            timed_out=list(data["timed_out"]),
            players=tuple(data["players"]),
            turn=data["turn"],
            turns=data["turns"],
            drawn=data["drawn"],
            drawn_from_pile=data["drawn_from_pile"],
            locked=frozenset(data["locked"]),
            plain={seat: set(cards) for seat, cards in data["plain"]},
            burned=set(data["burned"]),
            claims=list(data["claims"]),
            reshuffles=data["reshuffles"],
        )


class MatchCore:
    """Match-level data, the event/input history and the helpers the actions share."""

    def __init__(self, options: RummyOptions, seats: int) -> None:
        if options.ruleset != "cacheta-raiz":
            raise GameError(
                "unsupported_ruleset",
                f"the {options.ruleset} rules are not playable yet",
                {"ruleset": options.ruleset},
            )
        if not (options.min_players <= seats <= options.max_players):
            raise GameError(
                "invalid_seat_count",
                f"{seats} seats; this preset plays with {options.min_players} to "
                f"{options.max_players}",
                {"seats": seats},
            )
        self.options = options
        """Resolved options (never change during the match)."""
        self.rules = MeldRules.from_options(options)
        """Meld rules derived from the options."""
        self.options_dict = options.to_dict()
        """``options.to_dict()``, computed once (views share it: treat it as read-only)."""
        self.seats = seats
        """Number of seats."""
        self.decks = options.decks_for(seats)
        """Packs in the shoe (fixed by the number of seats at the start)."""
        self.lives = [options.lives] * seats
        """Lives per seat."""
        self.dealer: int | None = None
        """Dealer of the current (or last) round."""
        self.round: RoundState | None = None
        """The round in progress (``None`` before the first dealer is drawn and after the end)."""
        self.round_number = 0
        """Number of the latest round started."""
        self.winner: int | None = None
        """Match winner once over."""
        self.placements: list[tuple[int, int]] | None = None
        """``(seat, place)`` once over."""
        self.eliminations: list[list[int]] = []
        """Groups of seats eliminated together, in order."""
        self.last_result: dict[str, Any] | None = None
        """Public summary of the last finished round."""
        self.steps = 0
        """Inputs applied so far."""
        self.deadline_token = 0
        """Token of the current timer (increases whenever a new timer starts)."""
        self.next_seq = 0
        """``seq`` of the next event."""
        self.inputs: list[Action] = []
        """Every input applied, as records (replaying them rebuilds the match; ``snapshot``
        writes their dict forms)."""
        self.events: list[Event] = []
        """Every event emitted."""
        self._batch: list[Event] = []

    # --- status --------------------------------------------------------------------------
    @property
    def over(self) -> bool:
        """Whether the match has ended."""
        return self.winner is not None

    def alive(self, seat: int) -> bool:
        """Whether ``seat`` still has lives."""
        return self.lives[seat] > 0

    def in_marra(self, seat: int) -> bool:
        """Exactly one life: cannot run."""
        return self.lives[seat] == 1

    def next_alive_after(self, seat: int) -> int:
        """The next seat after ``seat`` (cyclic) that is alive."""
        for step in range(1, self.seats + 1):
            candidate = (seat + step) % self.seats
            if self.lives[candidate] > 0:
                return candidate
        raise AssertionError("no seat alive")

    # --- history -------------------------------------------------------------------------
    def _emit(self, event: Event) -> None:
        """Record ``event``, built with ``seq=self.next_seq`` (the next number of the match).

        The caller builds the record (keyword arguments straight into its ``__init__``: packing
        them into a dict for this method to unpack cost a third of the construction).
        """
        if event.seq != self.next_seq:
            raise AssertionError(f"event {event!r} is not numbered {self.next_seq}")
        self.next_seq += 1
        self.events.append(event)
        self._batch.append(event)

    def _begin(self, action: Action) -> None:
        self.inputs.append(action)
        self.steps += 1
        self._batch = []

    def _finish(self) -> tuple[Event, ...]:
        batch = tuple(self._batch)
        self._batch = []
        return batch

    def _new_deadline(self) -> None:
        self.deadline_token += 1

    # --- snapshot ------------------------------------------------------------------------
    def snapshot(self, include_history: bool = False) -> dict[str, Any]:
        """Complete JSON-able state; with ``include_history`` also the inputs and events."""
        data: dict[str, Any] = {
            "version": SNAPSHOT_VERSION,
            "options": self.options.to_dict(),
            "seats": self.seats,
            "decks": self.decks,
            "lives": list(self.lives),
            "dealer": self.dealer,
            "round_number": self.round_number,
            "round": self.round.to_dict() if self.round else None,
            "winner": self.winner,
            "placements": [list(pair) for pair in self.placements] if self.placements else None,
            "eliminations": [list(group) for group in self.eliminations],
            "last_result": self.last_result,
            "steps": self.steps,
            "deadline_token": self.deadline_token,
            "next_seq": self.next_seq,
        }
        if include_history:
            data["inputs"] = [action.to_dict() for action in self.inputs]
            data["events"] = [event.to_dict() for event in self.events]
        return data

    def _load(self, data: dict[str, Any]) -> None:
        from app.games.actions import action_from_dict
        from app.games.events import event_from_dict

        if data.get("version") != SNAPSHOT_VERSION:
            raise GameError("invalid_snapshot", "unknown snapshot version")
        self.lives = list(data["lives"])
        self.dealer = data["dealer"]
        self.round_number = data["round_number"]
        self.round = (
            RoundState.from_dict(data["round"], self.options, self.decks) if data["round"] else None
        )
        self.winner = data["winner"]
        self.placements = (
            [(seat, place) for seat, place in data["placements"]] if data["placements"] else None
        )
        self.eliminations = [list(group) for group in data["eliminations"]]
        self.last_result = data["last_result"]
        self.steps = data["steps"]
        self.deadline_token = data["deadline_token"]
        self.next_seq = data["next_seq"]
        self.inputs = [action_from_dict(item) for item in data.get("inputs", [])]
        self.events = [event_from_dict(event) for event in data.get("events", [])]
