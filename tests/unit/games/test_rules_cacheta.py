"""RULES.md §3 (``cacheta-raiz``) on the engine, one test per rule."""

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
from app.games.events import ClaimResolved, ClaimWindowEnded, DealerDecisionStarted, DecisionMade

from .support import (
    DISCARDER,
    TWO_MELDS_NEEDS_9,
    c,
    cs,
    decide_all,
    hand,
    play,
    refuse,
    rigged_order,
    start,
    types,
)

RAIZ = resolve_options("cacheta-raiz")


def test_rule_3_players_2_to_10() -> None:
    for seats in (1, 11):
        with pytest.raises(GameError) as error:
            new_match(RAIZ, seats)
        assert error.value.code == "invalid_seat_count"
    for seats in range(2, 11):
        assert new_match(RAIZ, seats).seats == seats


def test_rule_3_decks_two_up_to_five_players_four_above_in_the_deal() -> None:
    for seats, cards in ((5, 104), (6, 208)):
        match = new_match(RAIZ, seats)
        match.apply_chance(0)
        request = match.pending_chance()
        assert request is not None and (request.kind, request.size) == ("deal", cards)


def test_rule_3_lives_seven_each_by_default() -> None:
    assert new_match(RAIZ, 3).lives == [7, 7, 7]


def test_rule_3_first_dealer_is_a_chance_input_then_rotates_to_the_next_alive_seat() -> None:
    match = new_match(RAIZ, 3)
    request = match.pending_chance()
    assert request is not None and (request.kind, request.label, request.size) == (
        "first_dealer",
        "first_dealer",
        3,
    )
    refuse("invalid_chance", match.apply_chance, 3)
    match.apply_chance(2)
    assert match.dealer == 2 and match.round is not None and match.round.seats == (0, 1, 2)
    match.apply_chance(list(range(104)))
    decide_all(match, {0: False, 1: False, 2: False})  # all ran: round 2
    assert match.dealer == 0 and match.round.number == 2  # type: ignore[union-attr]


def test_rule_3_dealer_skips_eliminated_seats_and_eliminated_seats_take_no_part() -> None:
    # seat 1 is in marra and plays; seat 2 closes; seat 1 loses its last life
    match = start(3, dealer=0, lives=[7, 1, 7], hands={2: cs(TWO_MELDS_NEEDS_9)}, stock=cs("JC 9S"))
    decide_all(match, {0: False, 1: True, 2: True})
    match.timeout()  # seat 1: draws JC and discards it
    match.claim_window_closed()
    match.draw_stock(2)
    events = match.close(2)
    assert "eliminated" in types(events)
    assert match.lives == [6, 0, 7] and match.dealer == 2
    assert match.round is not None and match.round.seats == (0, 2)
    refuse("seat_eliminated", match.abandon_win, 1)


def test_rule_3_vira_is_the_next_stock_card_after_the_deal_and_defines_the_wild() -> None:
    match = start(4, vira="5H")
    assert match.round is not None
    assert match.round.vira == c("5H") and match.round.wilds == frozenset(cs("6H 6H#1"))
    assert c("5H") not in match.round.stock  # out of play until the round ends
    assert spectator_view(match)["round"]["vira"] == c("5H")


def test_rule_3_first_mandar_player_after_the_dealer_starts_turns_pass_among_mandar() -> None:
    match = start(4, dealer=0)
    decide_all(match, {1: False, 2: True, 3: True, 0: True})
    assert match.round is not None and match.round.players == (2, 3, 0)
    order = []
    for _ in range(4):
        order.append(match.round.turn)
        match.timeout()
        match.timeout()
    assert order == [2, 3, 0, 2]


def test_rule_3_runners_cards_stay_out_of_play_and_runners_get_no_turns() -> None:
    match = start(4, dealer=0, hands={1: cs(TWO_MELDS_NEEDS_9)})
    decide_all(match, {1: False})
    runner_hand = hand(match, 1)
    assert match.round is not None and match.round.turn == 2
    refuse("not_in_round", match.draw_stock, 1)
    match.timeout()  # seat 2 draws and discards
    refuse("not_in_round", match.claim, 1)
    match.timeout()
    assert hand(match, 1) == runner_hand
    assert match.round is not None and not set(runner_hand) & set(match.round.stock)


def test_rule_3_non_dealers_decide_secretly() -> None:
    match = start(4, dealer=0)
    events = match.decide(1, True)
    made = next(event for event in events if isinstance(event, DecisionMade))
    assert visible_event(made, 1) is not None
    assert visible_event(made, 2) is None and visible_event(made, None) is None
    assert player_view(match, 1)["round"]["my_decision"] is True
    for viewer in (2, 0):
        view = player_view(match, viewer)
        assert view["round"]["my_decision"] is None and view["round"]["decisions"] is None
        assert "seats" not in view["deadline"]  # who has decided is not shown either
    assert spectator_view(match)["round"]["decisions"] is None


def test_rule_3_dealer_decides_last_seeing_only_how_many_chose_mandar() -> None:
    match = start(4, dealer=0)
    refuse("not_your_turn", match.decide, 0, True)
    match.decide(1, True)
    match.decide(2, False)
    events = match.decide(3, True)
    started = next(event for event in events if isinstance(event, DealerDecisionStarted))
    assert started.mandar_count == 2
    assert visible_event(started, 0)["mandar_count"] == 2  # type: ignore[index]
    assert "mandar_count" not in visible_event(started, 1)  # type: ignore[operator]
    dealer_view = player_view(match, 0)
    assert dealer_view["round"]["mandar_count"] == 2 and dealer_view["round"]["decisions"] is None
    assert "mandar_count" not in player_view(match, 1)["round"]
    refuse("already_decided", match.decide, 1, False)
    assert match.current_deadline().kind == "dealer_decision"  # type: ignore[union-attr]


def test_rule_3_a_non_dealer_decides_once_and_cannot_change_its_choice() -> None:
    match = start(4, dealer=0)
    match.decide(1, True)
    refuse("already_decided", match.decide, 1, False)
    refuse("already_decided", match.decide, 1, True)
    assert not match.can_decide(1, False)
    assert match.round is not None and match.round.decisions == {1: True}
    assert match.round.phase == "deciding"


def test_rule_3_the_dealer_has_its_own_30_second_decision_timer() -> None:
    match = start(3, dealer=0, options={"turn_timeout_ms": 25_000, "claim_window_ms": 3_000})
    first = match.current_deadline()
    assert first is not None and (first.kind, first.duration_ms, first.seats) == (
        "decision",
        30_000,
        (1, 2),
    )
    match.decide(1, True)
    match.decide(2, True)
    deadline = match.current_deadline()
    assert deadline is not None
    assert (deadline.kind, deadline.duration_ms, deadline.seats) == (
        "dealer_decision",
        30_000,
        (0,),
    )
    assert deadline.token != first.token  # a new timer, not what is left of the others'


def test_rule_3_a_dealer_in_marra_cannot_run() -> None:
    match = start(3, dealer=0, lives=[1, 7, 7])
    match.decide(1, False)
    match.decide(2, False)
    refuse("marra_cannot_run", match.decide, 0, False)
    assert not match.can_decide(0, False) and match.can_decide(0, True)
    events = match.decide(0, True)
    ended = next(event for event in events if event.type == "round_ended")
    assert (ended.result, ended.winner) == ("one_left", 0)  # type: ignore[attr-defined]
    assert match.lives == [1, 6, 6]


def test_rule_3_nobody_decides_again_once_the_cards_are_played() -> None:
    match = play(4, dealer=0)
    assert match.round is not None and match.round.phase == "draw"
    for seat in (0, 1, 2, 3):
        for mandar in (True, False):
            refuse("wrong_phase", match.decide, seat, mandar)
    match.draw_stock(1)
    refuse("wrong_phase", match.decide, 0, False)
    match.discard(1, hand(match, 1)[0])
    refuse("wrong_phase", match.decide, 0, False)
    assert match.round.phase == "claim_window" and match.round.decisions == {
        0: True,
        1: True,
        2: True,
        3: True,
    }


def test_rule_3_choices_revealed_once_the_dealer_has_decided() -> None:
    match = start(4, dealer=0)
    match.decide(1, True)
    match.decide(2, False)
    match.decide(3, True)
    events = match.decide(0, True)
    revealed = events[1]
    assert revealed.type == "decisions_revealed"
    assert (revealed.mandar, revealed.ran) == ((0, 1, 3), (2,))  # type: ignore[attr-defined]
    assert spectator_view(match)["round"]["decisions"] == [
        [0, True],
        [1, True],
        [2, False],
        [3, True],
    ]


def test_rule_3_no_decision_in_time_means_correr() -> None:
    match = start(4, dealer=0)
    match.decide(1, True)
    deadline = match.current_deadline()
    assert deadline is not None and (deadline.kind, deadline.duration_ms) == ("decision", 30_000)
    events = match.timeout(deadline.token)
    assert [(e.seat, e.mandar, e.by_timeout) for e in events if isinstance(e, DecisionMade)] == [
        (2, False, True),
        (3, False, True),
    ]
    match.timeout()  # the dealer runs too: seat 1 alone played
    assert match.last_result is not None
    assert (match.last_result["result"], match.last_result["winner"]) == ("one_left", 1)
    assert match.lives == [6, 7, 6, 6]


def test_rule_3_marra_cannot_run_its_timeout_means_mandar_and_it_is_public() -> None:
    match = start(3, dealer=0, lives=[1, 1, 7])
    refuse("marra_cannot_run", match.decide, 1, False)
    assert not match.can_decide(1, False) and match.can_decide(1, True)
    assert spectator_view(match)["marra"] == [True, True, False]
    match.decide(2, False)
    events = match.timeout()  # seat 1 (marra): mandar
    assert [(e.seat, e.mandar) for e in events if isinstance(e, DecisionMade)] == [(1, True)]
    events = match.timeout()  # the dealer in marra: mandar
    assert [(e.seat, e.mandar) for e in events if isinstance(e, DecisionMade)] == [(0, True)]
    assert match.round is not None and match.round.players == (1, 0)


def test_rule_3_all_but_one_ran_that_one_wins_the_round_without_playing() -> None:
    match = start(4, dealer=0)
    events = []
    for seat, choice in ((1, False), (2, True), (3, False), (0, False)):
        events += match.decide(seat, choice)
    ended = next(event for event in events if event.type == "round_ended")
    assert (ended.result, ended.winner) == ("one_left", 2)  # type: ignore[attr-defined]
    assert ended.lives_lost == ((0, 1), (1, 1), (2, 0), (3, 1))  # type: ignore[attr-defined]
    assert "turn_started" not in types(events)


def test_rule_3_all_ran_round_annulled_everybody_loses_one() -> None:
    match = start(3, dealer=0)
    events = []
    for seat in (1, 2, 0):
        events += match.decide(seat, False)
    ended = next(event for event in events if event.type == "round_ended")
    assert (ended.result, ended.winner) == ("all_ran", None)  # type: ignore[attr-defined]
    assert match.lives == [6, 6, 6]


def test_rule_3_turn_timeout_in_draw_phase_draws_from_the_stock_and_discards_it() -> None:
    match = play(stock=cs("QC"))
    deadline = match.current_deadline()
    assert deadline is not None and (deadline.kind, deadline.duration_ms) == ("turn", 25_000)
    events = match.timeout(deadline.token)
    assert types(events) == ["drew_stock", "discarded", "claim_window_opened"]
    assert events[0].by_timeout and events[1].card == c("QC")  # type: ignore[attr-defined]


def test_rule_3_turn_timeout_in_discard_phase_discards_the_card_just_drawn() -> None:
    match = play(stock=cs("QC"))
    token = match.current_deadline().token  # type: ignore[union-attr]
    match.draw_stock(1)
    assert match.current_deadline().token == token  # one timer for the whole turn  # type: ignore[union-attr]
    events = match.timeout(token)
    assert events[0].type == "discarded" and events[0].card == c("QC")  # type: ignore[attr-defined]


def test_rule_3_turn_timeout_after_a_discard_draw_discards_the_latest_unlocked_card() -> None:
    match = play(hands={1: cs("KC 2D 3S 4H 5D 7S 8H 10C JD")}, stock=cs("QC"))
    match.timeout()  # seat 1 discards QC
    match.claim_window_closed()
    latest = hand(match, 2)[-1]
    match.draw_discard(2)
    events = match.timeout()
    assert events[0].type == "discarded" and events[0].card == latest  # type: ignore[attr-defined]


def test_rule_3_a_timeout_never_closes_for_the_player() -> None:
    match = play(hands={1: cs(TWO_MELDS_NEEDS_9)}, stock=cs("9S"))
    match.draw_stock(1)
    assert match.can_close(1)
    events = match.timeout()
    assert "closed" not in types(events) and events[0].card == c("9S")  # type: ignore[attr-defined]


def test_rule_3_claim_window_opens_after_every_discard_and_nobody_may_draw() -> None:
    match = play()
    events = match.timeout()
    assert types(events)[-1] == "claim_window_opened"
    deadline = match.current_deadline()
    assert deadline is not None and (deadline.kind, deadline.duration_ms) == ("claim_window", 3_000)
    refuse("wrong_phase", match.draw_stock, 2)
    refuse("wrong_phase", match.draw_discard, 2)
    events = match.timeout()  # same as claim_window_closed
    assert types(events) == ["claim_window_ended", "turn_started"]
    assert events[0].by_timeout and events[0].claimants == ()  # type: ignore[attr-defined]


def claim_setup(hands: dict[int, str], discard: str = "9H"):  # type: ignore[no-untyped-def]
    match = play(hands={1: cs(DISCARDER), **{seat: cs(text) for seat, text in hands.items()}})
    match.draw_stock(1)
    match.discard(1, c(discard))
    return match


def test_rule_3_claim_needs_two_disjoint_melds_and_not_being_the_discarder() -> None:
    match = claim_setup({2: TWO_MELDS_NEEDS_9})
    refuse("discarder_cannot_claim", match.claim, 1)
    refuse("claim_not_allowed", match.claim, 3)  # a junk hand holds no meld
    assert match.can_claim(2)
    match.claim(2)
    refuse("already_claimed", match.claim, 2)


def test_rule_3_claim_needs_two_disjoint_melds_one_meld_or_two_sharing_a_card_is_refused() -> None:
    match = claim_setup(
        {
            2: "5C 6C 7C 10H 8D JS 2H QS KH",  # exactly one meld: 5C 6C 7C
            3: "4H#1 5H#1 6H#1 6C#1 6S#1 9C#1 JD#1 2S#1 QC#1",  # 4-5-6H and 6H 6C 6S share 6H
            0: "7D#1 8D#1 9D#1 KC#1 KH#1 KS#1 3C#1 5S#1 JH#1",  # 7-8-9D and KC KH KS: disjoint
        }
    )
    for seat in (2, 3):
        refuse("claim_not_allowed", match.claim, seat)
        assert not match.can_claim(seat)
        assert player_view(match, seat)["round"]["holds_two_melds"] is False
    assert match.can_claim(0) and player_view(match, 0)["round"]["holds_two_melds"] is True
    match.claim(0)
    assert match.round is not None and match.round.claims == [0]


def test_rule_3_claim_accepted_on_two_melds_alone_then_burns_if_the_card_does_not_close() -> None:
    match = claim_setup({2: "AH 2H 3H 4S 5S 6S JC QD KC"})  # two melds, 9H does not close
    match.claim(2)  # accepted: the server does not check the card at claim time
    events = match.claim_window_closed()
    resolved = [event for event in events if isinstance(event, ClaimResolved)]
    assert [(event.seat, event.outcome) for event in resolved] == [(2, "burned")]
    assert match.round is not None and match.round.pile[-1] == c("9H")  # the card stays
    assert match.round.burned == {2}
    assert spectator_view(match)["round"]["burned"] == [2]


def test_rule_3_burned_player_may_not_draw_from_the_pile_nor_claim_again() -> None:
    match = claim_setup({2: "AH 2H 3H 4S 5S 6S JC QD KC"})
    match.claim(2)
    match.claim_window_closed()
    refuse("burned", match.draw_discard, 2)
    match.draw_stock(2)
    match.discard(2, c("KC"))
    match.claim_window_closed()
    match.draw_stock(3)
    match.discard(3, hand(match, 3)[0])
    refuse("burned", match.claim, 2)


def test_rule_3_burning_lasts_only_for_the_rest_of_the_round() -> None:
    # round 1 (dealer 0, order 1 2 3 0): seat 3 claims 9H, which does not close it: burned;
    # seat 2 then takes 9H and closes. Round 2 starts with nobody burned.
    match = claim_setup({2: TWO_MELDS_NEEDS_9, 3: "AC 2C 3C 4D#1 5D#1 6D#1 JC QD KS"})
    match.claim(3)
    match.claim_window_closed()
    assert match.round is not None and match.round.burned == {3}
    assert player_view(match, 3)["round"]["burned"] == [3]
    match.draw_discard(2)
    match.close(2)
    assert match.last_result is not None and match.last_result["winner"] == 2
    assert match.round is not None and match.round.number == 2 and match.round.dealer == 1
    assert match.round.burned == set()
    assert spectator_view(match)["round"]["burned"] == []
    # round 2 (dealer 1, order 2 3 0 1): seat 3 draws from the pile and claims again
    match.apply_chance(
        rigged_order(match, {2: cs(DISCARDER), 3: cs("AH 2H 3H 4S 5S 6S JC QD KC")}, c("KD"))
    )
    decide_all(match)
    assert player_view(match, 3)["round"]["burned"] == []
    match.draw_stock(2)
    match.discard(2, c("9H"))
    assert match.can_claim(3) and player_view(match, 3)["round"]["holds_two_melds"] is True
    match.claim_window_closed()
    assert match.can_draw_discard(3)
    match.draw_discard(3)
    assert c("9H") in hand(match, 3)
    match.discard(3, c("KC"))
    match.claim_window_closed()
    match.timeout()  # seat 0 draws and discards
    match.claim(3)
    assert match.round is not None and match.round.claims == [3]


def test_rule_3_burned_claim_leaves_the_card_for_the_next_player() -> None:
    match = claim_setup({3: "AH 2H 3H 4S 5S 6S JC QD KC"})
    match.claim(3)
    match.claim_window_closed()
    match.draw_discard(2)
    assert c("9H") in hand(match, 2)


def test_rule_3_claim_priority_is_the_next_turn_first_then_turn_order() -> None:
    both = {2: TWO_MELDS_NEEDS_9, 3: "AC 2C 3C 4D#1 5D#1 6D#1 9C#1 9D#1 KS"}
    match = claim_setup(both)
    match.claim(3)  # clicks first: does not matter
    match.claim(2)
    events = match.claim_window_closed()
    assert [(e.seat, e.outcome) for e in events if isinstance(e, ClaimResolved)] == [
        (2, "closed"),
        (3, "not_evaluated"),
    ]
    closed = next(event for event in events if event.type == "closed")
    assert closed.out_of_turn and closed.claimed_card == c("9H")  # type: ignore[attr-defined]
    assert closed.discard == c("KC")  # type: ignore[attr-defined]
    assert match.lives == [5, 5, 7, 5]  # not_evaluated is not burned: a plain mandar loss


def test_rule_3_claim_priority_wraps_round_the_table_after_the_discarder() -> None:
    # dealer 1: turn order 2, 3, 0, 1. Seat 2 discards 9H; seats 0 and 3 both hold a close
    # with it. Seat 3 plays next, so it closes even though seat 0 has the lower number and
    # clicked first; seat 0 is not evaluated (and not burned).
    hands = {2: DISCARDER, 3: TWO_MELDS_NEEDS_9, 0: "AC 2C 3C 4D#1 5D#1 6D#1 9C#1 9D#1 KS"}
    match = play(dealer=1, hands={seat: cs(text) for seat, text in hands.items()})
    assert match.round is not None and match.round.players == (2, 3, 0, 1)
    match.draw_stock(2)
    match.discard(2, c("9H"))
    match.claim(0)
    match.claim(3)
    events = match.claim_window_closed()
    ended = next(event for event in events if isinstance(event, ClaimWindowEnded))
    assert (ended.discarder, ended.claimants) == (2, (3, 0))
    assert [(e.seat, e.outcome) for e in events if isinstance(e, ClaimResolved)] == [
        (3, "closed"),
        (0, "not_evaluated"),
    ]
    closed = next(event for event in events if event.type == "closed")
    assert closed.seat == 3 and closed.claimed_card == c("9H")  # type: ignore[attr-defined]
    assert match.last_result is not None and match.last_result["winner"] == 3
    assert match.lives == [5, 5, 5, 7]


def test_rule_3_earlier_claimants_that_do_not_close_burn_the_first_that_closes_wins() -> None:
    match = claim_setup(
        {2: "AH 2H 3H 4S 5S 6S JC QD KC", 3: "AC 2C 3C 4D#1 5D#1 6D#1 9C#1 9D#1 KS"}
    )
    match.claim(2)
    match.claim(3)
    events = match.claim_window_closed()
    assert [(e.seat, e.outcome) for e in events if isinstance(e, ClaimResolved)] == [
        (2, "burned"),
        (3, "closed"),
    ]
    assert match.last_result is not None and match.last_result["winner"] == 3


def test_rule_3_claimed_card_cannot_be_the_closers_discard() -> None:
    match = claim_setup(
        {2: "AH 2H 3H 4S 5S 6S 9C 9D 9H#1"}, discard="2D"
    )  # only discarding 2D itself would close
    match.claim(2)
    events = match.claim_window_closed()
    assert [(e.seat, e.outcome) for e in events if isinstance(e, ClaimResolved)] == [(2, "burned")]


def test_rule_3_next_turn_starts_when_the_window_closes_with_no_close() -> None:
    match = claim_setup({2: "AH 2H 3H 4S 5S 6S JC QD KC"})
    match.claim(2)
    events = match.claim_window_closed()
    assert types(events)[-1] == "turn_started" and events[-1].seat == 2  # type: ignore[attr-defined]


def test_rule_3_lives_lost_closer_none_mandar_two_runner_one_never_below_zero() -> None:
    match = start(
        4, dealer=0, hands={2: cs(TWO_MELDS_NEEDS_9)}, stock=cs("JC 9S"), lives=[7, 1, 7, 7]
    )
    decide_all(match, {3: False})
    match.timeout()  # seat 1 (marra) draws JC, discards it
    match.claim_window_closed()
    match.draw_stock(2)
    events = match.close(2)
    ended = next(event for event in events if event.type == "round_ended")
    assert ended.lives_lost == ((0, 2), (1, 1), (2, 0), (3, 1))  # type: ignore[attr-defined]
    assert match.lives == [5, 0, 7, 6]


def test_rule_3_last_player_with_lives_wins_the_match_with_placements() -> None:
    match = start(3, dealer=0, hands={1: cs(TWO_MELDS_NEEDS_9)}, stock=cs("9S"), lives=[2, 7, 2])
    decide_all(match)
    match.draw_stock(1)
    events = match.close(1)
    assert types(events)[-2:] == ["eliminated", "match_ended"]
    ended = events[-1]
    assert ended.winner == 1 and ended.reason == "last_standing"  # type: ignore[attr-defined]
    assert ended.placements == ((0, 2), (1, 1), (2, 2))  # eliminated together: shared place
    assert match.over and match.round is None and match.current_deadline() is None
    refuse("match_over", match.draw_stock, 1)


def test_rule_3_abandoned_table_the_connected_seat_wins() -> None:
    match = play(3)
    events = match.abandon_win(2)
    assert types(events) == ["match_ended"]
    assert events[0].reason == "abandon" and events[0].placements == ((0, 2), (1, 2), (2, 1))  # type: ignore[attr-defined]
    refuse("match_over", match.timeout)


def test_rule_3_preset_has_vira_same_suit_one_wild_per_meld_three_threes_no_full_close() -> None:
    match = start(2, vira="5H")
    assert match.rules.meld_shape == "three_threes" and match.rules.wilds_per_meld == 1
    assert not match.rules.full_close_allowed
    assert match.round is not None and match.round.wilds == frozenset(cs("6H 6H#1"))
