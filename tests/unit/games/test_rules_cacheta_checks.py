"""RULES.md §3 (``cacheta-raiz``) on the engine: the checks that refuse what a rule forbids.

The golden replays only feed legal inputs, so a dropped refusal passes them; each test here
fails when the check it names is weakened (docs/rules-traceability.md, [mut]).
"""

from __future__ import annotations

from app.games import (
    ChanceInput,
    ClaimWindowClosed,
    Decide,
    Timeout,
    new_match,
    resolve_options,
)

from .support import (
    DISCARDER,
    TWO_MELDS_NEEDS_9,
    c,
    cs,
    decide_all,
    play,
    refuse,
    seat_two_takes_the_discarded_wild,
    start,
)

RAIZ = resolve_options("cacheta-raiz")


def test_rule_3_claims_only_while_the_claim_window_is_open() -> None:
    # seat 2 holds two disjoint melds, yet may not claim in the draw or discard phase, and the
    # window's end is refused when no window is open (it would skip a turn)
    match = play(hands={1: cs(DISCARDER), 2: cs(TWO_MELDS_NEEDS_9)})
    refuse("wrong_phase", match.claim, 2)
    refuse("wrong_phase", match.claim_window_closed)
    match.draw_stock(1)
    refuse("wrong_phase", match.claim, 2)
    refuse("wrong_phase", match.claim_window_closed)
    assert not match.can_claim(2) and not match.can_claim_window_closed()
    assert match.round is not None and match.round.claims == [] and match.round.turn == 1
    match.discard(1, c("9H"))
    assert match.can_claim(2) and match.can_claim_window_closed()


def test_rule_3_a_wild_taken_from_the_pile_is_plain_for_the_two_meld_claim_test() -> None:
    # vira 5H: 6H is wild. Seat 2 takes 6H from the pile; with it as a joker (for 3S) it would
    # hold AS 2S 6H and 9C 9D 9S, but under wild_from_discard_is_plain it holds one meld only
    hands = {
        1: cs("6H 2D 3S#1 4H 5D 7S 8H 10C JC"),
        2: cs("AS 2S 9C 9D 9S JD 5C 7D KH"),
        3: cs("QH 2C 4S 6D 8C 10H JH QC KD"),
    }
    for plain in (False, True):
        match = seat_two_takes_the_discarded_wild(hands, plain)
        match.discard(2, c("KH"))
        match.claim_window_closed()
        match.draw_stock(3)
        match.discard(3, c("QH"))
        if plain:
            refuse("claim_not_allowed", match.claim, 2)
        else:
            match.claim(2)


def test_rule_3_a_claim_closes_with_its_own_discard_never_a_full_close() -> None:
    # with meld_shape any and full_close_allowed, seat 2's nine cards plus the claimed 9H all
    # fit in melds (AH 2H 3H, 4S 5S 6S 7S, 9C 9D 9H); the claim still closes with a discard
    options = {"meld_shape": "any", "full_close_allowed": True}
    match = play(hands={1: cs(DISCARDER), 2: cs("AH 2H 3H 4S 5S 6S 9C 9D 7S#1")}, options=options)
    match.draw_stock(1)
    match.discard(1, c("9H"))
    match.claim(2)
    events = match.claim_window_closed()
    closed = next(event for event in events if event.type == "closed")
    assert closed.seat == 2 and closed.claimed_card == c("9H")  # type: ignore[attr-defined]
    assert closed.discard in cs("4S 7S#1") and not closed.full  # type: ignore[attr-defined]


def test_rule_3_an_eliminated_seat_takes_no_part_in_the_next_rounds() -> None:
    # seat 1 loses its last life in round 1; in round 2 it may not decide, play or claim,
    # and an out-of-range seat is refused as such
    match = start(3, dealer=0, lives=[7, 1, 7], hands={2: cs(TWO_MELDS_NEEDS_9)}, stock=cs("JC 9S"))
    decide_all(match, {0: False, 1: True, 2: True})
    match.timeout()
    match.claim_window_closed()
    match.draw_stock(2)
    match.close(2)
    assert match.lives == [6, 0, 7]
    match.apply_chance(list(range(104)))
    for mandar in (True, False):
        refuse("seat_eliminated", match.decide, 1, mandar)
    for seat in (-1, 3, True):
        refuse("invalid_seat", match.decide, seat, True)
    decide_all(match)
    assert match.round is not None and match.round.players == (0, 2)
    refuse("seat_eliminated", match.draw_stock, 1)
    refuse("seat_eliminated", match.claim, 1)


def test_rule_3_a_decision_is_exactly_mandar_or_correr() -> None:
    # only true (mandar) or false (correr): 1, 0, "no" or None are refused and change nothing
    match = start(3, dealer=0)
    before = match.state_hash()
    for bad in (1, 0, "no", None):
        refuse("invalid_action", match.decide, 1, bad)
        assert not match.can_decide(1, bad)  # type: ignore[arg-type]
    assert match.state_hash() == before and match.round is not None
    assert match.round.decisions == {}
    match.decide(1, False)


def test_rule_3_only_the_rule_sets_seat_counts_and_seats_are_accepted() -> None:
    # the engine plays cacheta-raiz only, with min_players..max_players seats (an override of
    # max_players lowers the bound); an abandon win names a seat of the table
    refuse("unsupported_ruleset", new_match, resolve_options("pife-classic"), 2)
    four = resolve_options("cacheta-raiz", {"max_players": 4})
    refuse("invalid_seat_count", new_match, four, 5)
    assert new_match(four, 4).seats == 4
    match = play(3)
    for seat in (-1, 3, True):
        refuse("invalid_seat", match.abandon_win, seat)


def test_rule_3_a_recorded_chance_input_must_answer_the_pending_request() -> None:
    # a deal value recorded for another round or under another label is refused, even though
    # the permutation itself would fit; only player actions are legal actions
    match = new_match(RAIZ, 2)
    refuse("invalid_chance", match.apply_chance, True)  # a seat number, not a boolean
    refuse("no_deadline", match.timeout)  # no timer runs while a chance input is awaited
    match.apply(ChanceInput("first_dealer", 1, "first_dealer", 0))
    refuse("no_deadline", match.timeout, 0)
    shuffled = tuple(range(104))
    for kind, number, label in (
        ("deal", 2, "deal"),
        ("deal", 1, "reshuffle/1"),
        ("reshuffle", 1, "deal"),
    ):
        refuse("invalid_chance", match.apply, ChanceInput(kind, number, label, shuffled))
    match.apply(ChanceInput("deal", 1, "deal", shuffled))
    assert not match.can_act(Timeout()) and not match.can_act(ClaimWindowClosed())
    assert match.can_act(Decide(1, True))
