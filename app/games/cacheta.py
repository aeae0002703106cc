"""The ``cacheta-raiz`` match (RULES.md §3): chance inputs, mandar/correr, timeouts,
``apply`` for recorded inputs, legal actions, replay and restore.

Chance is an explicit input (open_spiel style): ``pending_chance()`` says what the driver
must supply and ``apply_chance(value)`` consumes it; the state holds no RNG and reads no
clock (deadlines arrive as ``timeout()``). Replaying a match's ``inputs`` through
:func:`replay` reproduces its events exactly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from app.games.actions import (
    ACTION_TYPES,
    AbandonWin,
    Action,
    ChanceInput,
    Claim,
    Close,
    Decide,
    Discard,
    DrawDiscard,
    DrawStock,
    Timeout,
    action_from_dict,
)
from app.games.cards import wild_ids
from app.games.errors import GameError, passes
from app.games.events import (
    DealerDecisionStarted,
    Dealt,
    DecisionMade,
    DecisionsRevealed,
    Event,
    FirstDealerDrawn,
    MatchStarted,
    Reshuffled,
    canonical_bytes,
    freeze,
)
from app.games.options import RummyOptions
from app.games.state import Deadline, RoundState
from app.games.turns import TurnActions

__all__ = ("PLAYER_ACTIONS", "CachetaMatch", "new_match", "replay", "restore")

_INT_ONLY = frozenset({int})
PLAYER_ACTIONS = (Decide, DrawStock, DrawDiscard, Discard, Close, Claim)
"""Actions a player sends (the others come from timers, the service and ``rng/``)."""


class CachetaMatch(TurnActions):
    """A ``cacheta-raiz`` match between seats ``0..seats-1``."""

    def __init__(self, options: RummyOptions, seats: int) -> None:
        super().__init__(options, seats)
        self._emit(
            MatchStarted(
                seq=self.next_seq,
                seats=seats,
                lives=options.lives,
                decks=self.decks,
                options=tuple(
                    (name, freeze(value)) for name, value in sorted(self.options_dict.items())
                ),
            ),
        )
        self._batch = []
        if options.first_dealer == "creator":
            self.dealer = 0
            self._start_round()
            self._batch = []

    # --- chance inputs ------------------------------------------------------------------------
    def verify_chance(self, value: int | Sequence[int]) -> None:
        """Raise unless ``value`` answers ``pending_chance()``."""
        self._verify_running()
        request = self.pending_chance()
        if request is None:
            raise GameError("no_pending_chance", "no chance input is expected now")
        size = request.size
        if request.kind == "first_dealer":
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < size:
                raise GameError("invalid_chance", f"expected a seat in [0, {size})", {"size": size})
            return
        if (
            not isinstance(value, list | tuple)
            or len(value) != size
            or not _INT_ONLY.issuperset(map(type, value))
            or set(value) != set(range(size))
        ):
            raise GameError(
                "invalid_chance", f"expected a permutation of range({size})", {"size": size}
            )

    def can_apply_chance(self, value: int | Sequence[int]) -> bool:
        """Whether ``verify_chance`` passes."""
        return passes(self.verify_chance, value)

    def apply_chance(self, value: int | Sequence[int]) -> tuple[Event, ...]:
        """Consume the chance input (first dealer seat, or a deal/reshuffle permutation)."""
        self.verify_chance(value)
        request = self.pending_chance()
        assert request is not None
        recorded: int | tuple[int, ...] = value if isinstance(value, int) else tuple(value)
        self._begin(ChanceInput(request.kind, request.round_number, request.label, recorded))
        if request.kind == "first_dealer":
            assert isinstance(recorded, int)
            self.dealer = recorded
            self._emit(FirstDealerDrawn(seq=self.next_seq, seat=recorded))
            self._start_round()
        elif request.kind == "deal":
            assert isinstance(recorded, tuple)
            self._deal(recorded)
        else:
            assert isinstance(recorded, tuple)
            self._reshuffle(recorded)
        return self._finish()

    def _deal(self, order: tuple[int, ...]) -> None:
        current = self._play_round()
        seats = current.seats
        size = self.options.hand_size * len(seats)
        current.hands = {seat: [] for seat in seats}
        for index in range(size):
            current.hands[seats[index % len(seats)]].append(order[index])
        rest = size
        if self.options.wild_cards:
            current.vira = order[rest]
            current.wilds = wild_ids(current.vira, self.options.wild_scope, self.decks)
            rest += 1
        stock = order[rest:]
        current.stock = list(reversed(stock))
        self._emit(
            Dealt(
                seq=self.next_seq,
                round=current.number,
                seats=seats,
                hands=tuple(tuple(current.hands[seat]) for seat in seats),
                vira=current.vira,
                wilds=tuple(sorted(current.wilds)),
                stock=stock,
            ),
        )
        if self.options.mandar_correr:
            current.phase = "deciding"
            self._new_deadline()
        else:
            current.players = seats
            self._start_turn(seats[0])

    def _reshuffle(self, order: tuple[int, ...]) -> None:
        current = self._play_round()
        items = current.pile[:-1]
        stock = tuple(items[index] for index in order)
        current.pile = current.pile[-1:]
        current.stock = list(reversed(stock))
        current.reshuffles += 1
        self._emit(
            Reshuffled(
                seq=self.next_seq,
                round=current.number,
                number=current.reshuffles,
                stock=stock,
                kept=current.pile[-1],
            ),
        )
        assert current.turn is not None
        self._start_turn(self._next_player(current.turn))

    # --- mandar / correr -----------------------------------------------------------------------
    def verify_decide(self, seat: int, mandar: bool) -> None:
        """Raise unless ``seat`` may choose now (non-dealers first, then the dealer)."""
        current = self._verify_seat(seat)
        if current.phase not in ("deciding", "dealer_deciding"):
            raise GameError("wrong_phase", "no decision is being taken", {"phase": current.phase})
        if current.phase == "deciding":
            if seat == current.dealer:
                raise GameError("not_your_turn", "the dealer decides after everybody else")
            if seat in current.decisions:
                raise GameError("already_decided", "this seat has already decided")
        elif seat != current.dealer:
            raise GameError("already_decided", "only the dealer is still deciding")
        if not isinstance(mandar, bool):
            raise GameError("invalid_action", "mandar must be true or false")
        if not mandar and self.in_marra(seat):
            raise GameError("marra_cannot_run", "with one life left the player must play")

    def can_decide(self, seat: int, mandar: bool) -> bool:
        """Whether ``verify_decide`` passes."""
        return passes(self.verify_decide, seat, mandar)

    def decide(self, seat: int, mandar: bool) -> tuple[Event, ...]:
        """Choose mandar (play) or correr (run)."""
        self.verify_decide(seat, mandar)
        self._begin(Decide(seat, mandar))
        self._do_decide(seat, mandar, by_timeout=False)
        return self._finish()

    def _do_decide(self, seat: int, mandar: bool, by_timeout: bool) -> None:
        current = self._play_round()
        current.decisions[seat] = mandar
        if by_timeout:
            current.timed_out.append(seat)
        self._emit(
            DecisionMade(
                seq=self.next_seq,
                round=current.number,
                seat=seat,
                mandar=mandar,
                by_timeout=by_timeout,
            )
        )
        if current.phase == "dealer_deciding":
            self._reveal_decisions(current)
        elif all(other in current.decisions for other in current.seats if other != current.dealer):
            current.phase = "dealer_deciding"
            self._new_deadline()
            self._emit(
                DealerDecisionStarted(
                    seq=self.next_seq,
                    round=current.number,
                    dealer=current.dealer,
                    mandar_count=sum(current.decisions.values()),
                ),
            )

    def _reveal_decisions(self, current: RoundState) -> None:
        self._emit(
            DecisionsRevealed(
                seq=self.next_seq,
                round=current.number,
                mandar=tuple(sorted(seat for seat, play in current.decisions.items() if play)),
                ran=tuple(sorted(seat for seat, play in current.decisions.items() if not play)),
                by_timeout=tuple(sorted(current.timed_out)),
            ),
        )
        # seats are in deal order (starting after the dealer): the first one who plays starts
        current.players = tuple(seat for seat in current.seats if current.decisions[seat])
        if not current.players:
            self._end_round("all_ran", None)
        elif len(current.players) == 1:
            self._end_round("one_left", current.players[0])
        else:
            self._start_turn(current.players[0])

    # --- deadlines ------------------------------------------------------------------------------
    def current_deadline(self) -> Deadline | None:
        """The timer the service must run now (``None`` while a chance input is pending)."""
        if self.over or self.round is None or self.pending_chance() is not None:
            return None
        current = self.round
        options = self.options
        token = self.deadline_token
        if current.phase == "deciding":
            waiting = tuple(
                seat
                for seat in current.seats
                if seat != current.dealer and seat not in current.decisions
            )
            return Deadline("decision", options.decision_timeout_ms, token, waiting)
        if current.phase == "dealer_deciding":
            return Deadline(
                "dealer_decision", options.decision_timeout_ms, token, (current.dealer,)
            )
        if current.phase in ("draw", "discard"):
            assert current.turn is not None
            return Deadline("turn", options.turn_timeout_ms, token, (current.turn,))
        if current.phase == "claim_window":
            return Deadline("claim_window", options.claim_window_ms, token, ())
        return None

    def verify_timeout(self, token: int | None = None) -> Deadline:
        """Raise unless a deadline runs (and ``token``, when given, is its token)."""
        self._verify_running()
        deadline = self.current_deadline()
        if deadline is None:
            raise GameError("no_deadline", "no timer is running now")
        if token is not None and token != deadline.token:
            raise GameError(
                "stale_deadline", "that timer is no longer current", {"current": deadline.token}
            )
        return deadline

    def can_timeout(self, token: int | None = None) -> bool:
        """Whether ``verify_timeout`` passes."""
        return passes(self.verify_timeout, token)

    def timeout(self, token: int | None = None) -> tuple[Event, ...]:
        """The current deadline passed: the server plays as RULES.md §3 says.

        Decisions: correr (mandar in marra). Turn: a whole turn is one timer; in the draw phase
        the server draws from the stock and discards that card, in the discard phase it
        discards the card just drawn (if it came from the discard pile, the most recently
        received unlocked card). Claim window: same as ``claim_window_closed``. Never closes.
        """
        deadline = self.verify_timeout(token)
        self._begin(Timeout(token))
        current = self._play_round()
        if deadline.kind == "decision":
            for seat in deadline.seats:
                self._do_decide(seat, self.in_marra(seat), by_timeout=True)
        elif deadline.kind == "dealer_decision":
            self._do_decide(current.dealer, self.in_marra(current.dealer), by_timeout=True)
        elif deadline.kind == "turn":
            seat = deadline.seats[0]
            if current.phase == "draw":
                self._do_draw_stock(seat, by_timeout=True)
            assert current.drawn is not None
            card = current.drawn
            if current.drawn_from_pile:
                card = next(c for c in reversed(current.hands[seat]) if c not in current.locked)
            self._do_discard(seat, card, by_timeout=True)
        else:
            self._do_close_window(by_timeout=True)
        return self._finish()

    # --- abandoned table -------------------------------------------------------------------------
    def verify_abandon_win(self, seat: int) -> None:
        """Raise unless ``seat`` can be declared winner of an abandoned (frozen) table."""
        self._verify_running()
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < self.seats:
            raise GameError("invalid_seat", f"no seat {seat!r}", {"seat": seat})
        if not self.alive(seat):
            raise GameError("seat_eliminated", f"seat {seat} is eliminated", {"seat": seat})

    def can_abandon_win(self, seat: int) -> bool:
        """Whether ``verify_abandon_win`` passes."""
        return passes(self.verify_abandon_win, seat)

    def abandon_win(self, seat: int) -> tuple[Event, ...]:
        """The only connected seat of a frozen table wins after ``abandon_after_ms``."""
        self.verify_abandon_win(seat)
        self._begin(AbandonWin(seat))
        self._end_match(seat, "abandon")
        return self._finish()

    # --- uniform input ---------------------------------------------------------------------------
    def apply(self, action: Action | dict[str, Any]) -> tuple[Event, ...]:
        """Apply one input record (or its dict form) -- what the service and replays use.

        A record of type ``x`` calls the method ``x`` with the record's fields in order
        (``ChanceInput`` also checks that it answers the pending request).
        """
        record = action_from_dict(action) if isinstance(action, dict) else action
        if not isinstance(record, ChanceInput):
            method = getattr(self, record.type, None)
            if record.type not in ACTION_TYPES or method is None:
                raise GameError("unknown_action", f"unknown action {record!r}")
            events: tuple[Event, ...] = method(*record.arguments())
            return events
        request = self.pending_chance()
        if request is not None and (request.kind, request.round_number, request.label) != (
            record.kind,
            record.round,
            record.label,
        ):
            raise GameError(
                "invalid_chance",
                f"expected the {request.label} input of round {request.round_number}",
                {"kind": request.kind, "round": request.round_number, "label": request.label},
            )
        return self.apply_chance(record.value)

    def legal_actions(self, seat: int) -> list[Action]:
        """Every player action ``seat`` may take now (agrees with ``can_x`` by construction)."""
        if self.over or self.round is None:
            return []
        current = self.round
        candidates: list[Action] = []
        if current.phase in ("deciding", "dealer_deciding"):
            candidates = [Decide(seat, True), Decide(seat, False)]
        elif current.phase == "draw":
            candidates = [DrawStock(seat), DrawDiscard(seat)]
        elif current.phase == "discard":
            hand = current.hands.get(seat, [])
            candidates = [Discard(seat, card) for card in hand]
            candidates.append(Close(seat))
        elif current.phase == "claim_window":
            candidates = [Claim(seat)]
        return [action for action in candidates if self.can_act(action)]

    def can_act(self, action: Action) -> bool:
        """Whether the player action ``action`` would be accepted now (its ``can_x``)."""
        if not isinstance(action, PLAYER_ACTIONS):
            return False
        check = getattr(self, f"can_{action.type}")
        return bool(check(*action.arguments()))

    # --- snapshot ---------------------------------------------------------------------------
    def state_hash(self) -> str:
        """SHA-256 (hex) of the canonical bytes of ``snapshot()``."""
        return hashlib.sha256(canonical_bytes(self.snapshot())).hexdigest()


def new_match(options: RummyOptions, seats: int) -> CachetaMatch:
    """A new match; its first input is the ``first_dealer`` chance (see ``pending_chance``)."""
    return CachetaMatch(options, seats)


def replay(
    options: RummyOptions, seats: int, inputs: Iterable[Action | dict[str, Any]]
) -> CachetaMatch:
    """Rebuild a match from its recorded inputs (the events come out identical)."""
    match = new_match(options, seats)
    for record in inputs:
        match.apply(record)
    return match


def restore(data: dict[str, Any]) -> CachetaMatch:
    """The match saved by ``snapshot()`` (with its history when the snapshot has one)."""
    try:
        options = RummyOptions.from_dict(data["options"])
        match = CachetaMatch.__new__(CachetaMatch)
        TurnActions.__init__(match, options, data["seats"])
        if match.decks != data["decks"]:
            raise GameError("invalid_snapshot", "the deck count does not match the options")
        match._load(data)
    except (KeyError, TypeError, ValueError) as error:
        raise GameError("invalid_snapshot", f"unreadable snapshot: {error}") from None
    return match
