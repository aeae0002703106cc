"""Round lifecycle of ``cacheta-raiz``: rounds, turns, round end, match end, and the checks
every action shares. Mutating helpers (``_start_*``, ``_end_*``) run only after an action
has been verified; they never raise on valid input.
"""

from __future__ import annotations

from app.games.cards import CARDS_PER_DECK
from app.games.errors import GameError
from app.games.events import Eliminated, MatchEnded, RoundEnded, RoundStarted, TurnStarted
from app.games.state import ChanceRequest, MatchCore, RoundState

__all__ = ("LIVES_LOST_MANDAR", "LIVES_LOST_RAN", "RoundFlow")

LIVES_LOST_MANDAR = 2
"""Lives lost by a player who chose mandar and did not close."""
LIVES_LOST_RAN = 1
"""Lives lost by a player who ran (and by everybody when all ran)."""


_CHANCE_PHASES = frozenset({"deal", "reshuffle"})
"""The round phases in which the match waits for a chance input (see ``pending_chance``)."""


class RoundFlow(MatchCore):
    """Lifecycle helpers and shared verification."""

    # --- chance ---------------------------------------------------------------------------
    def pending_chance(self) -> ChanceRequest | None:
        """The chance input the match waits for, if any (no deadline runs meanwhile)."""
        if self.over:
            return None
        if self.round is None:
            return ChanceRequest("first_dealer", 1, "first_dealer", self.seats)
        if self.round.phase == "deal":
            return ChanceRequest("deal", self.round.number, "deal", CARDS_PER_DECK * self.decks)
        if self.round.phase == "reshuffle":
            number = self.round.reshuffles + 1
            return ChanceRequest(
                "reshuffle", self.round.number, f"reshuffle/{number}", len(self.round.pile) - 1
            )
        return None

    # --- shared checks --------------------------------------------------------------------
    def _verify_running(self) -> None:
        if self.over:
            raise GameError("match_over", "the match is over", {"winner": self.winner})

    def _verify_seat(self, seat: int) -> RoundState:
        """Match running, a valid alive seat, no chance input pending; returns the round."""
        self._verify_running()
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < self.seats:
            raise GameError("invalid_seat", f"no seat {seat!r}", {"seat": seat})
        current = self.round
        if current is None or current.phase in _CHANCE_PHASES:  # ``pending_chance`` is not None
            request = self.pending_chance()
            assert request is not None
            raise GameError(
                "awaiting_chance",
                f"waiting for the {request.kind} chance input",
                {"kind": request.kind},
            )
        if not self.alive(seat):
            raise GameError("seat_eliminated", f"seat {seat} is eliminated", {"seat": seat})
        return current

    def _verify_turn(self, seat: int, phase: str) -> RoundState:
        """``seat`` plays this round, it is its turn, and the round is in ``phase``."""
        current = self._verify_seat(seat)
        if current.phase != phase:
            raise GameError(
                "wrong_phase",
                f"not possible in the {current.phase} phase",
                {"phase": current.phase, "expected": phase},
            )
        if seat not in current.players:
            raise GameError(
                "not_in_round", f"seat {seat} is not playing this round", {"seat": seat}
            )
        if seat != current.turn:
            raise GameError(
                "not_your_turn", f"it is seat {current.turn}'s turn", {"turn": current.turn}
            )
        return current

    # --- lifecycle ------------------------------------------------------------------------
    def _start_round(self) -> None:
        assert self.dealer is not None
        self.round_number += 1
        order = ((self.dealer + 1 + step) % self.seats for step in range(self.seats))
        seats = tuple(seat for seat in order if self.alive(seat))
        self.round = RoundState(number=self.round_number, dealer=self.dealer, seats=seats)
        self._emit(
            RoundStarted(
                seq=self.next_seq,
                round=self.round_number,
                dealer=self.dealer,
                seats=seats,
                lives=tuple(self.lives),
            ),
        )

    def _start_turn(self, seat: int) -> None:
        current = self.round
        assert current is not None
        current.phase = "draw"
        current.turn = seat
        current.turns += 1
        current.drawn = None
        current.drawn_from_pile = False
        current.locked = frozenset()
        self._new_deadline()
        self._emit(
            TurnStarted(seq=self.next_seq, round=current.number, seat=seat, turn=current.turns)
        )

    def _next_player(self, seat: int) -> int:
        players = self.round.players if self.round else ()
        return players[(players.index(seat) + 1) % len(players)]

    def _order_after(self, seat: int) -> list[int]:
        """The players in turn order starting with the one after ``seat``."""
        players = self.round.players if self.round else ()
        start = players.index(seat) + 1
        return [players[(start + step) % len(players)] for step in range(len(players) - 1)]

    def _end_round(self, result: str, winner: int | None) -> None:
        current = self.round
        assert current is not None
        losses = []
        for seat in sorted(current.seats):
            if result == "drawn" or seat == winner:
                loss = 0
            elif result == "all_ran" or not current.decisions.get(seat, True):
                loss = LIVES_LOST_RAN
            else:
                loss = LIVES_LOST_MANDAR
            loss = min(loss, self.lives[seat])  # never below zero
            self.lives[seat] -= loss
            losses.append((seat, loss))
        self._emit(
            RoundEnded(
                seq=self.next_seq,
                round=current.number,
                result=result,
                winner=winner,
                lives_lost=tuple(losses),
                lives=tuple(self.lives),
            ),
        )
        out = tuple(seat for seat, loss in losses if loss and not self.lives[seat])
        if out:
            self.eliminations.append(list(out))
            self._emit(Eliminated(seq=self.next_seq, round=current.number, seats=out))
        self.last_result = {
            "round": current.number,
            "result": result,
            "winner": winner,
            "lives_lost": [list(pair) for pair in losses],
            "eliminated": list(out),
            "melds": None,
            "discard": None,
            "out_of_turn": False,
        }
        alive = [seat for seat in range(self.seats) if self.alive(seat)]
        assert alive, "a round always leaves somebody alive"
        if len(alive) == 1:
            self._end_match(alive[0], "last_standing")
            return
        assert self.dealer is not None
        self.dealer = self.next_alive_after(self.dealer)
        self._start_round()

    def _end_match(self, winner: int, reason: str) -> None:
        places = [(winner, 1)]
        placed = 1
        survivors = [seat for seat in range(self.seats) if self.alive(seat) and seat != winner]
        places += [(seat, 2) for seat in survivors]
        placed += len(survivors)
        for group in reversed(self.eliminations):
            places += [(seat, placed + 1) for seat in group]
            placed += len(group)
        self.winner = winner
        self.placements = sorted(places)
        self.round = None
        self._emit(
            MatchEnded(
                seq=self.next_seq, winner=winner, placements=tuple(self.placements), reason=reason
            )
        )
