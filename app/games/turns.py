"""Turn actions of ``cacheta-raiz`` (RULES.md §2-§3): draw, discard, close, and the claim
window with *bater fora da vez* and *queimar*. Each action is a trio: ``verify_x`` raises
``GameError``, ``can_x`` says whether ``verify_x`` passes, ``x`` verifies, applies and
returns the events.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.games.actions import Claim, ClaimWindowClosed, Close, Discard, DrawDiscard, DrawStock
from app.games.cards import identical_ids
from app.games.errors import GameError, passes
from app.games.events import (
    Claimed,
    ClaimResolved,
    ClaimWindowEnded,
    ClaimWindowOpened,
    Closed,
    Discarded,
    DrewDiscard,
    DrewStock,
    Event,
)
from app.games.flow import RoundFlow
from app.games.melds import is_valid_meld
from app.games.solver import CloseResult, find_close, forms_meld_with, has_two_disjoint_melds
from app.games.state import RoundState

__all__ = ("TurnActions",)

Partition = Sequence[Sequence[int]]


class TurnActions(RoundFlow):
    """Draw, discard, close, claim and the claim window."""

    # --- draw from the stock ----------------------------------------------------------------
    def verify_draw_stock(self, seat: int) -> None:
        """Raise unless ``seat`` may draw from the stock now."""
        self._verify_turn(seat, "draw")

    def can_draw_stock(self, seat: int) -> bool:
        """Whether ``verify_draw_stock`` passes."""
        return passes(self.verify_draw_stock, seat)

    def draw_stock(self, seat: int) -> tuple[Event, ...]:
        """Draw the top of the stock."""
        self.verify_draw_stock(seat)
        self._begin(DrawStock(seat))
        self._do_draw_stock(seat, by_timeout=False)
        return self._finish()

    def _do_draw_stock(self, seat: int, by_timeout: bool) -> None:
        current = self._play_round()
        card = current.stock.pop()
        current.hands[seat].append(card)
        current.drawn = card
        current.phase = "discard"
        self._emit(
            DrewStock(
                seq=self.next_seq, round=current.number, seat=seat, card=card, by_timeout=by_timeout
            )
        )

    # --- draw from the discard pile -----------------------------------------------------------
    def verify_draw_discard(self, seat: int) -> None:
        """Raise unless ``seat`` may take the top of the discard pile now."""
        current = self._verify_turn(seat, "draw")
        if not current.pile:
            raise GameError("discard_pile_empty", "the discard pile is empty")
        if seat in current.burned:
            raise GameError("burned", "a burned player may not draw from the discard pile")
        top = current.pile[-1]
        wilds = current.wilds_for(seat)
        if self.options.wild_from_discard_is_plain:
            wilds = wilds - {top}  # taken from the pile, it would count as its natural card
        if self.options.restricted_discard_draw and not forms_meld_with(
            top, current.hands[seat], wilds, self.rules
        ):
            raise GameError(
                "discard_draw_restricted",
                "the discard top must form a meld with two cards of the hand",
                {"card": top},
            )

    def can_draw_discard(self, seat: int) -> bool:
        """Whether ``verify_draw_discard`` passes."""
        return passes(self.verify_draw_discard, seat)

    def draw_discard(self, seat: int) -> tuple[Event, ...]:
        """Take the top of the discard pile (locked for this turn)."""
        self.verify_draw_discard(seat)
        self._begin(DrawDiscard(seat))
        current = self._play_round()
        card = current.pile.pop()
        current.hands[seat].append(card)
        current.drawn = card
        current.drawn_from_pile = True
        current.locked = self._lock_set(card)
        if self.options.wild_from_discard_is_plain and card in current.wilds:
            current.plain.setdefault(seat, set()).add(card)
        current.phase = "discard"
        self._emit(DrewDiscard(seq=self.next_seq, round=current.number, seat=seat, card=card))
        return self._finish()

    def _lock_set(self, card: int) -> frozenset[int]:
        if self.options.discard_lock_identical:
            return frozenset((card, *identical_ids(card, self.decks)))
        return frozenset((card,))

    # --- discard ------------------------------------------------------------------------------
    def verify_discard(self, seat: int, card: int) -> None:
        """Raise unless ``seat`` may discard ``card`` now."""
        current = self._verify_turn(seat, "discard")
        if card not in current.hands[seat]:
            raise GameError("card_not_in_hand", f"card {card!r} is not in the hand", {"card": card})
        if card in current.locked:
            raise GameError(
                "card_locked", "a card taken from the discard pile stays this turn", {"card": card}
            )

    def can_discard(self, seat: int, card: int) -> bool:
        """Whether ``verify_discard`` passes."""
        return passes(self.verify_discard, seat, card)

    def discard(self, seat: int, card: int) -> tuple[Event, ...]:
        """Discard ``card``; the claim window opens."""
        self.verify_discard(seat, card)
        self._begin(Discard(seat, card))
        self._do_discard(seat, card, by_timeout=False)
        return self._finish()

    def _do_discard(self, seat: int, card: int, by_timeout: bool) -> None:
        current = self._play_round()
        current.hands[seat].remove(card)
        current.pile.append(card)
        self._emit(
            Discarded(
                seq=self.next_seq, round=current.number, seat=seat, card=card, by_timeout=by_timeout
            )
        )
        if not self.options.out_of_turn_claims:
            self._after_claim_window()
            return
        current.phase = "claim_window"
        current.claims = []
        self._new_deadline()
        self._emit(
            ClaimWindowOpened(seq=self.next_seq, round=current.number, discarder=seat, card=card)
        )

    # --- close (bater) on one's own turn --------------------------------------------------------
    def verify_close(
        self, seat: int, partition: Partition | None = None, discard: int | None = None
    ) -> None:
        """Raise unless ``seat`` can close now with this partition/discard (or any, if None)."""
        self._check_close(seat, partition, discard)

    def can_close(
        self, seat: int, partition: Partition | None = None, discard: int | None = None
    ) -> bool:
        """Whether ``verify_close`` passes."""
        return passes(self.verify_close, seat, partition, discard)

    def close(
        self, seat: int, partition: Partition | None = None, discard: int | None = None
    ) -> tuple[Event, ...]:
        """Close: the given partition is verified, or the server finds one (and the discard)."""
        result = self._check_close(seat, partition, discard)
        frozen = None if partition is None else tuple(tuple(meld) for meld in partition)
        self._begin(Close(seat, frozen, discard))
        self._do_close(seat, result, claimed=None)
        return self._finish()

    def _check_close(
        self, seat: int, partition: Partition | None, discard: int | None
    ) -> CloseResult:
        current = self._verify_turn(seat, "discard")
        hand = current.hands[seat]
        wilds = current.wilds_for(seat)
        if discard is not None:
            if discard not in hand:
                raise GameError(
                    "card_not_in_hand", "the discard is not in the hand", {"card": discard}
                )
            if discard in current.locked:
                raise GameError(
                    "card_locked", "a locked card cannot be the discard", {"card": discard}
                )
        if partition is None:
            found = find_close(hand, wilds, self.rules, current.locked, discard=discard)
            if found is None:
                raise GameError("cannot_close", "the hand does not close", {"discard": discard})
            return found
        return self._check_partition(current, seat, partition, discard)

    def _check_partition(
        self, current: RoundState, seat: int, partition: Partition, discard: int | None
    ) -> CloseResult:
        hand = current.hands[seat]
        used = [card for meld in partition for card in meld]
        if len(set(used)) != len(used):
            raise GameError("invalid_partition", "a card appears twice in the partition")
        for card in used:
            if card not in hand:
                raise GameError(
                    "card_not_in_hand", f"card {card!r} is not in the hand", {"card": card}
                )
        if discard in used:
            raise GameError("invalid_partition", "the discard cannot also be in a meld")
        left = [card for card in hand if card not in used and card != discard]
        if discard is None and len(left) == 1:
            discard = left.pop()
            if discard in current.locked:
                raise GameError(
                    "card_locked", "a locked card cannot be the discard", {"card": discard}
                )
        if left:
            raise GameError("invalid_partition", "every card but the discard must be in a meld")
        if discard is None and not self.rules.full_close_allowed:
            raise GameError("full_close_not_allowed", "this preset has no full close")
        wilds = current.wilds_for(seat)
        for meld in partition:
            if not self.rules.size_allowed(len(meld)) or not is_valid_meld(meld, wilds, self.rules):
                raise GameError("invalid_partition", "not a valid meld", {"meld": list(meld)})
        melds = tuple(sorted(tuple(sorted(meld)) for meld in partition))
        return CloseResult(melds=melds, discard=discard)

    def _do_close(self, seat: int, result: CloseResult, claimed: int | None) -> None:
        current = self._play_round()
        if result.discard is not None:
            current.hands[seat].remove(result.discard)
            current.pile.append(result.discard)
        self._emit(
            Closed(
                seq=self.next_seq,
                round=current.number,
                seat=seat,
                melds=result.melds,
                discard=result.discard,
                full=result.full,
                out_of_turn=claimed is not None,
                claimed_card=claimed,
            ),
        )
        self._end_round("closed", seat)
        assert self.last_result is not None
        self.last_result |= {
            "melds": [list(meld) for meld in result.melds],
            "discard": result.discard,
            "out_of_turn": claimed is not None,
        }

    # --- claims (bater fora da vez) ---------------------------------------------------------------
    def verify_claim(self, seat: int) -> None:
        """Raise unless ``seat`` may claim the discard now (it must hold two disjoint melds)."""
        current = self._verify_seat(seat)
        if current.phase != "claim_window":
            raise GameError(
                "wrong_phase", "claims only during the claim window", {"phase": current.phase}
            )
        if seat not in current.players:
            raise GameError(
                "not_in_round", f"seat {seat} is not playing this round", {"seat": seat}
            )
        if seat == current.turn:
            raise GameError("discarder_cannot_claim", "the discarder cannot claim its own discard")
        if seat in current.burned:
            raise GameError("burned", "a burned player may not claim again this round")
        if seat in current.claims:
            raise GameError("already_claimed", "already claimed in this window")
        if not has_two_disjoint_melds(current.hands[seat], current.wilds_for(seat), self.rules):
            raise GameError("claim_not_allowed", "a claim needs two valid disjoint melds in hand")

    def can_claim(self, seat: int) -> bool:
        """Whether ``verify_claim`` passes."""
        return passes(self.verify_claim, seat)

    def claim(self, seat: int) -> tuple[Event, ...]:
        """Claim the discard; it is resolved when the window closes."""
        self.verify_claim(seat)
        self._begin(Claim(seat))
        current = self._play_round()
        current.claims.append(seat)
        self._emit(Claimed(seq=self.next_seq, round=current.number, seat=seat))
        return self._finish()

    def verify_claim_window_closed(self) -> None:
        """Raise unless a claim window is open."""
        self._verify_running()
        if self.round is None or self.round.phase != "claim_window":
            raise GameError("wrong_phase", "no claim window is open")

    def can_claim_window_closed(self) -> bool:
        """Whether ``verify_claim_window_closed`` passes."""
        return passes(self.verify_claim_window_closed)

    def claim_window_closed(self) -> tuple[Event, ...]:
        """Close the claim window: resolve the claims in priority order."""
        self.verify_claim_window_closed()
        self._begin(ClaimWindowClosed())
        self._do_close_window(by_timeout=False)
        return self._finish()

    def _do_close_window(self, by_timeout: bool) -> None:
        current = self._play_round()
        discarder = current.turn
        assert discarder is not None
        card = current.pile[-1]
        claimants: tuple[int, ...] = ()
        if current.claims:  # usually nobody claims
            claimants = tuple(
                seat for seat in self._order_after(discarder) if seat in current.claims
            )
        current.claims = []
        self._emit(
            ClaimWindowEnded(
                seq=self.next_seq,
                round=current.number,
                discarder=discarder,
                card=card,
                claimants=claimants,
                by_timeout=by_timeout,
            ),
        )
        closer: tuple[int, CloseResult] | None = None
        for seat in claimants:
            if closer is not None:
                outcome = "not_evaluated"
            else:
                found = self._claim_close(current, seat, card)
                if found is not None:
                    closer = (seat, found)
                    outcome = "closed"
                else:
                    current.burned.add(seat)
                    outcome = "burned"
            self._emit(
                ClaimResolved(
                    seq=self.next_seq, round=current.number, seat=seat, card=card, outcome=outcome
                )
            )
        if closer is None:
            self._after_claim_window()
            return
        seat, found = closer
        current.pile.pop()
        current.hands[seat].append(card)
        if self.options.wild_from_discard_is_plain and card in current.wilds:
            current.plain.setdefault(seat, set()).add(card)
        self._do_close(seat, found, claimed=card)

    def _claim_close(self, current: RoundState, seat: int, card: int) -> CloseResult | None:
        """The claimant's close with the claimed card (which cannot be its discard)."""
        wilds = current.wilds_for(seat)
        if self.options.wild_from_discard_is_plain:
            wilds = wilds - {card}
        hand = [*current.hands[seat], card]
        return find_close(hand, wilds, self.rules, self._lock_set(card), allow_full=False)

    def _after_claim_window(self) -> None:
        current = self._play_round()
        assert current.turn is not None
        if not current.stock:
            limit = self.options.max_reshuffles
            if limit is not None and current.reshuffles >= limit:
                self._end_round("drawn", None)
            else:
                current.phase = "reshuffle"  # the next input is the reshuffle chance
            return
        self._start_turn(self._next_player(current.turn))

    def _play_round(self) -> RoundState:
        assert self.round is not None
        return self.round
