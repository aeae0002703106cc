"""RULES.md §2 (the turn) on the ``cacheta-raiz`` engine, one test per rule."""

from __future__ import annotations

import pytest

from app.games import (
    GameError,
    new_match,
    player_view,
    resolve_options,
    spectator_view,
    visible_event,
)
from app.games.events import Dealt, DrewDiscard

from .support import CLOSED9, c, cs, hand, play, refuse, types


def pass_turn(match, seat: int, discard: int | None = None) -> None:  # type: ignore[no-untyped-def]
    """``seat`` draws from the stock and discards (the drawn card by default); window closes."""
    match.draw_stock(seat)
    match.discard(seat, discard if discard is not None else match.round.drawn)
    match.claim_window_closed()


def test_rule_2_dealt_one_at_a_time_nine_each_starting_after_the_dealer() -> None:
    match = new_match(resolve_options("cacheta-raiz"), 4)
    match.apply_chance(2)
    events = match.apply_chance(list(range(104)))
    dealt = next(event for event in events if isinstance(event, Dealt))
    assert dealt.seats == (3, 0, 1, 2)
    for position, seat in enumerate(dealt.seats):
        assert dealt.hands[position] == tuple(range(position, 36, 4))
        assert match.round is not None and match.round.hands[seat] == list(range(position, 36, 4))
    assert dealt.vira == 36  # the vira is the next stock card
    assert dealt.stock[0] == 37 and len(dealt.stock) == 104 - 36 - 1


def test_rule_2_discard_pile_starts_empty_and_the_first_player_draws_from_the_stock() -> None:
    match = play()
    assert match.round is not None and match.round.pile == [] and match.round.turn == 1
    refuse("discard_pile_empty", match.draw_discard, 1)
    match.draw_stock(1)


def test_rule_2_turn_is_draw_one_then_discard_or_close() -> None:
    match = play(stock=cs("QC"))
    refuse("wrong_phase", match.discard, 1, hand(match, 1)[0])
    refuse("not_your_turn", match.draw_stock, 2)
    events = match.draw_stock(1)
    assert types(events) == ["drew_stock"] and events[0].card == c("QC")  # type: ignore[attr-defined]
    refuse("wrong_phase", match.draw_stock, 1)
    refuse("wrong_phase", match.draw_discard, 1)
    refuse("card_not_in_hand", match.discard, 1, c("KS#1"))
    assert types(match.discard(1, c("QC"))) == ["discarded", "claim_window_opened"]


def test_rule_2_card_from_the_discard_pile_is_locked_for_the_turn_and_the_close() -> None:
    match = play(hands={1: cs("KC 2D 3S 4H 5D 7S 8H 10C JD"), 2: cs(CLOSED9)})
    pass_turn(match, 1, discard=c("KC"))
    match.draw_discard(2)
    refuse("card_locked", match.discard, 2, c("KC"))
    refuse("card_locked", match.close, 2, None, c("KC"))
    refuse("cannot_close", match.close, 2)  # only the locked card could be the discard
    assert not match.can_close(2)
    match.discard(2, c("AH"))


def test_rule_2_option_discard_lock_identical_locks_the_twin_too() -> None:
    hands = {1: cs("KC 2D 3S 4H 5D 7S 8H 10C JD"), 2: cs("KC#1 2H 3H 4S 5S 6S 9C 9D 9H")}
    plain = play(hands=hands)
    pass_turn(plain, 1, discard=c("KC"))
    plain.draw_discard(2)
    assert plain.can_discard(2, c("KC#1"))
    strict = play(hands=hands, options={"discard_lock_identical": True})
    pass_turn(strict, 1, discard=c("KC"))
    strict.draw_discard(2)
    refuse("card_locked", strict.discard, 2, c("KC#1"))


def test_rule_2_everybody_sees_which_card_was_taken_from_the_discard_pile() -> None:
    match = play(hands={1: cs("KC 2D 3S 4H 5D 7S 8H 10C JD")})
    pass_turn(match, 1, discard=c("KC"))
    events = match.draw_discard(2)
    taken = next(event for event in events if isinstance(event, DrewDiscard))
    for viewer in (None, 0, 1, 3):
        assert visible_event(taken, viewer)["card"] == c("KC")  # type: ignore[index]
    assert spectator_view(match)["round"]["taken_from_pile"] == c("KC")


def test_rule_2_a_card_drawn_from_the_stock_stays_hidden_after_a_turn_that_took_from_the_pile() -> (
    None
):
    # seat 2 takes KC from the pile; seat 3 then draws from the stock: only seat 3 sees that
    # card, and nothing says a card was taken from the pile on seat 3's turn
    match = play(hands={1: cs("KC 2D 3S 4H 5D 7S 8H 10C JD")}, stock=cs("QS QH"))
    pass_turn(match, 1, discard=c("KC"))
    match.draw_discard(2)
    match.discard(2, hand(match, 2)[0])
    match.claim_window_closed()
    match.draw_stock(3)
    assert match.round is not None and match.round.drawn == c("QH")
    assert spectator_view(match)["round"]["taken_from_pile"] is None
    assert player_view(match, 1)["round"]["taken_from_pile"] is None
    assert player_view(match, 3)["round"]["drawn"] == c("QH")
    events = match.timeout()  # the timeout discards the card just drawn from the stock
    assert events[0].type == "discarded" and events[0].card == c("QH")  # type: ignore[attr-defined]


def test_rule_2_option_restricted_discard_draw() -> None:
    hands = {1: cs("KC 2D 3S 4H 5D 7S 8H 10C JD"), 2: cs("KH KS 2C 4D 6H 7C 8S 10D QH")}
    match = play(hands=hands, options={"restricted_discard_draw": True})
    pass_turn(match, 1, discard=c("2D"))
    refuse("discard_draw_restricted", match.draw_discard, 2)  # 2D makes no meld with 2 cards
    match.draw_stock(2)
    match.discard(2, match.round.drawn)  # type: ignore[union-attr]
    match.claim_window_closed()
    pass_turn(match, 3)
    pass_turn(match, 0)
    match.draw_stock(1)
    match.discard(1, c("KC"))
    match.claim_window_closed()
    match.draw_discard(2)  # KC + KH + KS is a set: allowed


def test_rule_2_discard_pile_is_public_since_the_last_reshuffle() -> None:
    match = play()
    discarded = []
    for seat in (1, 2, 3, 0):
        pass_turn(match, seat)
        discarded.append(match.round.pile[-1])  # type: ignore[union-attr]
    assert spectator_view(match)["round"]["pile"] == discarded


def run_until_stock_is_empty(match) -> None:  # type: ignore[no-untyped-def]
    while match.round.stock:
        match.timeout()  # draw + discard by timeout
        assert match.round.phase == "claim_window"
        if match.round.stock:
            match.timeout()  # the window closes


def test_rule_2_stock_exhausted_reshuffles_the_pile_minus_its_top_after_the_claim_window() -> None:
    match = play(2)
    run_until_stock_is_empty(match)
    current = match.round
    assert current is not None and current.phase == "claim_window"
    assert match.pending_chance() is None  # a claim could still close the round
    pile_before = list(current.pile)
    match.claim_window_closed()
    request = match.pending_chance()
    assert request is not None
    assert (request.kind, request.round_number, request.label) == ("reshuffle", 1, "reshuffle/1")
    assert request.size == len(pile_before) - 1
    assert match.current_deadline() is None  # no timer while waiting for chance
    refuse("awaiting_chance", match.draw_stock, 0)
    order = list(reversed(range(request.size)))
    events = match.apply_chance(order)
    assert types(events) == ["reshuffled", "turn_started"]
    items = pile_before[:-1]
    assert current.pile == [pile_before[-1]]
    assert current.stock_top_first() == [items[index] for index in order]
    drawn = match.draw_stock(events[1].seat)  # type: ignore[attr-defined]
    assert drawn[0].card == items[order[0]]  # type: ignore[attr-defined]


def test_rule_2_max_reshuffles_exceeded_ends_the_round_drawn_nobody_loses() -> None:
    match = play(2, options={"max_reshuffles": 0})
    run_until_stock_is_empty(match)
    events = match.claim_window_closed()
    ended = next(event for event in events if event.type == "round_ended")
    assert ended.result == "drawn"  # type: ignore[attr-defined]
    assert match.lives == [7, 7] and match.round is not None and match.round.number == 2


def test_rule_2_unlimited_reshuffles_in_cacheta_raiz() -> None:
    match = play(2)
    for number in (1, 2):
        run_until_stock_is_empty(match)
        match.claim_window_closed()
        request = match.pending_chance()
        assert request is not None and request.label == f"reshuffle/{number}"
        match.apply_chance(list(range(request.size)))


def test_player_actions_wait_for_every_kind_of_pending_chance_input() -> None:
    """While the first dealer, the deal or a reshuffle is awaited, a player's action is
    refused with ``awaiting_chance`` naming the input (and nothing changes)."""
    match = new_match(resolve_options("cacheta-raiz"), 2)
    for kind in ("first_dealer", "deal"):
        request = match.pending_chance()
        assert request is not None and request.kind == kind
        for action, args in ((match.decide, (0, True)), (match.draw_stock, (1,))):
            with pytest.raises(GameError) as refused:
                action(*args)
            assert (refused.value.code, refused.value.details) == (
                "awaiting_chance",
                {"kind": kind},
            )
        assert match.pending_chance() == request
        match.apply_chance(0 if kind == "first_dealer" else list(range(request.size)))
    assert match.pending_chance() is None
    match.decide(1, True)  # the dealer's opponent decides first: actions are accepted again


def test_rule_2_option_restricted_discard_draw_counts_a_plain_wild_as_its_natural_card() -> None:
    # vira 5H: 6H is wild. KH KS + 6H as a joker is a set, but under
    # wild_from_discard_is_plain the 6H taken from the pile is only a 6H, which makes no meld
    # with two cards of this hand: the restricted draw refuses it
    hands = {1: cs("6H 2D 3S 4H 5D 7S 8H 10C JC"), 2: cs("KH KS 2C 4D 9H 7C 8S 10D QD")}
    for plain in (False, True):
        options = {"restricted_discard_draw": True, "wild_from_discard_is_plain": plain}
        match = play(hands=hands, vira="5H", options=options)
        pass_turn(match, 1, discard=c("6H"))
        if plain:
            refuse("discard_draw_restricted", match.draw_discard, 2)
        else:
            match.draw_discard(2)


def test_rule_2_the_lock_lasts_only_for_the_turn_of_the_draw() -> None:
    # under discard_lock_identical seat 2 takes KC from the pile, which locks KC and its twin
    # KC#1 for seat 2's turn only: seat 3 may discard its KC#1 on its own turn, and seat 2 may
    # discard KC on its next turn
    hands = {1: cs("KC 2D 3S 4H 5D 7S 8H 10C JD"), 3: cs("KC#1 2H 3H 4S 5S 6S 9C 9D 9H")}
    match = play(hands=hands, options={"discard_lock_identical": True})
    pass_turn(match, 1, discard=c("KC"))
    match.draw_discard(2)
    refuse("card_locked", match.discard, 2, c("KC"))
    match.discard(2, hand(match, 2)[0])
    match.claim_window_closed()
    match.draw_stock(3)
    assert match.can_discard(3, c("KC#1"))
    match.discard(3, c("KC#1"))
    match.claim_window_closed()
    pass_turn(match, 0)
    pass_turn(match, 1)
    match.draw_stock(2)
    match.discard(2, c("KC"))


def test_rule_2_a_deal_or_reshuffle_is_exactly_a_permutation_of_its_cards() -> None:
    # every physical card is dealt exactly once: a chance value that repeats a card, leaves
    # one out, adds one, or is not made of integers is refused and nothing changes
    match = new_match(resolve_options("cacheta-raiz"), 2)
    match.apply_chance(0)
    size = 104
    shuffled = list(range(size))
    bads: list[list[object]] = [
        [0] * size,
        list(range(1, size + 1)),
        [*shuffled, 0],
        shuffled[:-1],
        [True if card == 1 else card for card in shuffled],
        [float(card) for card in shuffled],
    ]
    before = match.state_hash()
    for bad in bads:
        refuse("invalid_chance", match.apply_chance, bad)
        assert not match.can_apply_chance(bad)  # type: ignore[arg-type]
    assert match.state_hash() == before
    match.apply_chance(shuffled)
