"""Views, the redacted event feed, action/event records, errors that change nothing."""

from __future__ import annotations

import json

import pytest

from app.games import (
    ACTION_TYPES,
    GameError,
    action_from_dict,
    canonical_bytes,
    event_from_dict,
    full_view,
    player_view,
    restore,
    spectator_view,
    visible_event,
    visible_events,
)
from app.games.actions import Close, Decide, Timeout
from app.games.views import CARD_FIELDS

from .support import c, cs, hand, play, seat_two_takes_the_discarded_wild, start


def _all_ints(value: object, into: set[int]) -> None:
    if isinstance(value, list):
        for item in value:
            _all_ints(item, into)
    elif isinstance(value, int) and not isinstance(value, bool):
        into.add(value)


def cards_in(value: object, found: set[int] | None = None) -> set[int]:
    """Every card id under a card-carrying key (``CARD_FIELDS``) of a view or event."""
    found = set() if found is None else found
    if isinstance(value, dict):
        for name, item in value.items():
            if name in CARD_FIELDS:
                _all_ints(item, found)
            elif isinstance(item, dict | list) and name != "options":
                cards_in(item, found)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list):
                cards_in(item, found)
    return found


def test_player_view_shows_own_hand_and_public_information_only() -> None:
    match = play(stock=cs("QC"))
    match.draw_stock(1)
    view = player_view(match, 1)
    assert view["round"]["hand"] == hand(match, 1) and view["round"]["drawn"] == c("QC")
    others = set().union(*(hand(match, seat) for seat in (0, 2, 3)))
    stock = set(match.round.stock)  # type: ignore[union-attr]
    for seat in (0, 2, 3):
        seen = cards_in(player_view(match, seat))
        assert not seen & (stock | set(hand(match, 1)))
        assert not seen & (others - set(hand(match, seat)))
        assert "hands" not in json.dumps(player_view(match, seat))
    assert not cards_in(spectator_view(match)) & (others | set(hand(match, 1)) | stock)
    assert view["round"]["hand_counts"] == [[1, 10], [2, 9], [3, 9], [0, 9]]
    assert view["round"]["stock_count"] == len(stock)


def test_full_view_has_every_hand_and_the_stock_order() -> None:
    match = play()
    view = full_view(match)
    assert view["round"]["hands"][1] == [1, hand(match, 1)]
    assert view["round"]["stock"] == match.round.stock_top_first()  # type: ignore[union-attr]
    assert view["state_hash"] == match.state_hash()


def test_event_feed_redacts_hidden_cards() -> None:
    match = start(4, dealer=0, stock=cs("QC"))
    dealt = next(event for event in match.events if event.type == "dealt")
    mine = visible_event(dealt, 2)
    assert mine is not None and mine["hand"] == hand(match, 2) and "stock" not in mine
    assert "hands" not in mine and mine["stock_count"] == len(match.round.stock)  # type: ignore[union-attr]
    spectator = visible_event(dealt, None)
    assert spectator is not None and spectator["hand"] is None
    for seat in (1, 2, 3, 0):
        match.decide(seat, True)
    drew = match.draw_stock(1)[0]
    assert visible_event(drew, 1)["card"] == c("QC")  # type: ignore[index]
    assert "card" not in visible_event(drew, 2)  # type: ignore[operator]
    feed = visible_events(match.events, 3)
    assert not cards_in(feed) & (set(hand(match, 1)) | set(match.round.stock))  # type: ignore[union-attr]


def test_views_and_events_are_json_with_integers_only() -> None:
    match = play()
    for data in (player_view(match, 1), spectator_view(match), full_view(match)):
        assert json.loads(canonical_bytes(data)) == json.loads(json.dumps(data))
    for event in match.events:
        assert event_from_dict(json.loads(json.dumps(event.to_dict()))) == event
    with pytest.raises(TypeError):
        canonical_bytes({"x": 1.5})
    assert canonical_bytes({"b": [1, (2, 3)], "a": True}) == b'{"a":true,"b":[1,[2,3]]}'


def test_action_records_round_trip_and_bad_records_are_refused() -> None:
    for record in (Decide(1, True), Close(2, ((1, 2, 3),), 5), Timeout(7)):
        assert action_from_dict(json.loads(json.dumps(record.to_dict()))) == record
    assert set(ACTION_TYPES) == {
        "decide",
        "draw_stock",
        "draw_discard",
        "discard",
        "close",
        "claim",
        "timeout",
        "claim_window_closed",
        "abandon_win",
        "chance",
    }  # rule 1: no laying melds down during the round, no adding to others' melds
    for bad, code in (
        ({"type": "fly"}, "unknown_action"),
        ({"type": "discard", "seat": 1}, "invalid_action"),
        ({"type": "discard", "seat": "1", "card": 2}, "invalid_action"),
        ({"type": "decide", "seat": 1, "mandar": 1}, "invalid_action"),
        ({"type": "claim", "seat": 1, "extra": 0}, "invalid_action"),
        ({"type": "discard", "seat": 1, "card": True}, "invalid_action"),
        ({"type": "timeout", "token": False}, "invalid_action"),
        ({"type": "chance", "kind": 1, "round": 1, "label": "deal", "value": 0}, "invalid_action"),
        (
            {"type": "chance", "kind": "deal", "round": 1, "label": None, "value": 0},
            "invalid_action",
        ),
    ):
        with pytest.raises(GameError) as error:
            action_from_dict(bad)
        assert error.value.code == code


def test_rule_1_refused_actions_and_closes_change_nothing() -> None:
    match = play(hands={1: cs("AH 2H 3H 4S 5S 6S 9C 9D KC")})
    before = (match.state_hash(), len(match.events), len(match.inputs))
    attempts = [
        lambda: match.discard(1, hand(match, 1)[0]),
        lambda: match.draw_stock(2),
        lambda: match.close(1),
        lambda: match.claim(2),
        lambda: match.decide(1, True),
        lambda: match.apply_chance([0]),
        lambda: match.timeout(999),
        lambda: match.apply({"type": "discard", "seat": 9, "card": 1}),
    ]
    for attempt in attempts:
        with pytest.raises(GameError):
            attempt()
        assert (match.state_hash(), len(match.events), len(match.inputs)) == before
    match.draw_stock(1)
    with pytest.raises(GameError) as error:
        match.close(1)  # the hand does not close: refused, nothing happens
    assert error.value.code == "cannot_close"
    with pytest.raises(GameError) as error:
        match.close(1, [cs("AH 2H 3H"), cs("4S 5S 6S"), cs("9C 9D KC")])
    assert error.value.code == "invalid_partition"
    assert match.round is not None and match.round.phase == "discard"


def test_rule_1_close_with_a_client_partition_or_found_by_the_server() -> None:
    hands = {1: cs("AH 2H 3H 4S 5S 6S 9C 9D KC")}
    server = play(hands=hands, stock=cs("9S"))
    assert player_view(server, 1)["round"]["holds_two_melds"] is True
    assert player_view(server, 2)["round"]["holds_two_melds"] is False
    server.draw_stock(1)
    assert player_view(server, 1)["round"]["can_close"] is True
    closed = next(e for e in server.close(1) if e.type == "closed")
    assert closed.discard == c("KC") and not closed.out_of_turn  # type: ignore[attr-defined]
    client = play(hands=hands, stock=cs("9S"))
    client.draw_stock(1)
    partition = [cs("AH 2H 3H"), cs("4S 5S 6S"), cs("9C 9D 9S")]
    closed = next(e for e in client.close(1, partition) if e.type == "closed")
    assert closed.melds == tuple(sorted(tuple(sorted(m)) for m in partition))  # type: ignore[attr-defined]
    assert client.last_result is not None and client.last_result["melds"] is not None
    named = play(hands=hands, stock=cs("9S"))
    named.draw_stock(1)
    with pytest.raises(GameError) as error:
        named.close(1, None, c("AH"))
    assert error.value.code == "cannot_close"


def test_rule_1_a_client_partition_repeating_a_card_is_refused() -> None:
    match = play(hands={1: cs("AH 2H 3H 4S 5S 6S 9C 9D KC")}, stock=cs("9S"))
    match.draw_stock(1)
    before = match.state_hash()
    melds = [cs("AH 2H 3H"), cs("4S 5S 6S"), cs("9C 9D 9S")]
    for partition in ([*melds, cs("9C 9D 9S")], [cs("AH 2H 3H"), cs("AH 2H 3H"), *melds[1:]]):
        with pytest.raises(GameError) as error:
            match.close(1, partition, c("KC"))
        assert error.value.code == "invalid_partition"
        assert not match.can_close(1, partition, c("KC"))
    assert match.state_hash() == before
    match.close(1, melds, c("KC"))  # the same melds once each close


def test_rule_1_three_threes_refuses_a_client_partition_with_melds_of_four_or_five() -> None:
    # cacheta-raiz closes with exactly three melds of three: a run of 4 plus a run of 5 does
    # not close, even though both melds are valid (it would under meld_shape any)
    hands = {1: cs("AH 2H 3H 4H 5S 6S 7S 8S KC")}
    partition = [cs("AH 2H 3H 4H"), cs("5S 6S 7S 8S 9S")]
    match = play(hands=hands, stock=cs("9S"))
    match.draw_stock(1)
    with pytest.raises(GameError) as error:
        match.close(1, partition, c("KC"))
    assert error.value.code == "invalid_partition"
    with pytest.raises(GameError):
        match.close(1, partition)
    with pytest.raises(GameError):
        match.close(1)
    assert match.round is not None and match.round.phase == "discard"
    any_shape = play(hands=hands, stock=cs("9S"), options={"meld_shape": "any"})
    any_shape.draw_stock(1)
    assert any_shape.can_close(1, partition, c("KC"))


def test_rule_1_a_client_partition_cannot_also_use_its_discard_in_a_meld() -> None:
    # under meld_shape any every card of this hand fits in melds; naming one of them as the
    # discard as well is refused (the card would be both laid down and discarded)
    hands = {1: cs("AH 2H 3H 4S 5S 6S 9C 9D 9H")}
    match = play(hands=hands, stock=cs("9S"), options={"meld_shape": "any"})
    match.draw_stock(1)
    partition = [cs("AH 2H 3H"), cs("4S 5S 6S"), cs("9C 9D 9H 9S")]
    with pytest.raises(GameError) as error:
        match.close(1, partition, c("9S"))
    assert error.value.code == "invalid_partition"
    assert not match.can_close(1, partition, c("9S"))
    assert match.round is not None and c("9S") in match.round.hands[1]


def test_rule_2_a_client_partition_cannot_leave_the_card_from_the_pile_as_the_discard() -> None:
    # seat 2 takes 9S from the pile: a partition leaving 9S out (so 9S would be the discard)
    # is refused; the same hand closes with 9S in a meld, discarding 9H
    hands = {1: cs("9S 2D 3S 4H 5D 7S 8H 10C JD"), 2: cs("AH 2H 3H 4S 5S 6S 9C 9D 9H")}
    match = play(hands=hands)
    match.draw_stock(1)
    match.discard(1, c("9S"))
    match.claim_window_closed()
    match.draw_discard(2)
    leaves_9s = [cs("AH 2H 3H"), cs("4S 5S 6S"), cs("9C 9D 9H")]
    with pytest.raises(GameError) as error:
        match.close(2, leaves_9s)
    assert error.value.code == "card_locked"
    assert not match.can_close(2, leaves_9s)
    events = match.close(2, [cs("AH 2H 3H"), cs("4S 5S 6S"), cs("9C 9D 9S")])
    closed = next(event for event in events if event.type == "closed")
    assert closed.discard == c("9H")  # type: ignore[attr-defined]


def test_rule_1_option_wild_from_discard_is_plain_for_the_taker() -> None:
    # vira 5H: 6H is wild; seat 2 takes 6H from the pile and may not use it as a joker
    hands = {1: cs("6H 2D 3S 4H 5D 7S 8H 10C JC"), 2: cs("AS 2S 9C 9D 9S JD QD KD 4C")}
    for plain in (False, True):
        match = seat_two_takes_the_discarded_wild(hands, plain)
        assert match.can_close(2) is (not plain)


def test_rule_1_cacheta_raiz_lets_a_wild_from_the_discard_pile_close_as_a_wild() -> None:
    # vira 5H: 6H is wild. Seat 2 closes AS 2S [6H as 3S], 9C 9D 9S, JD QD KD, discarding 4C.
    # cacheta-raiz (no override): wild_from_discard_is_plain is off, so the 6H taken from the
    # pile -- drawn on the turn or claimed out of turn -- is still a joker; with it on it is not.
    hands = {1: cs("6H 2D 3S 4H 5D 7S 8H 10C JC"), 2: cs("AS 2S 9C 9D 9S JD QD KD 4C")}
    joker_meld = tuple(sorted(cs("AS 2S 6H")))
    for options in ({}, {"wild_from_discard_is_plain": True}):
        plain = bool(options)
        drawn = play(hands=hands, vira="5H", options=options)
        assert drawn.options.wild_from_discard_is_plain is plain
        drawn.draw_stock(1)
        drawn.discard(1, c("6H"))
        drawn.claim_window_closed()
        drawn.draw_discard(2)
        assert player_view(drawn, 2)["round"]["plain_wilds"] == ([c("6H")] if plain else [])
        if plain:
            with pytest.raises(GameError) as error:
                drawn.close(2)
            assert error.value.code == "cannot_close"
        else:
            closed = next(e for e in drawn.close(2) if e.type == "closed")
            assert joker_meld in closed.melds and closed.discard == c("4C")  # type: ignore[attr-defined]
        claimed = play(hands=hands, vira="5H", options=options)
        claimed.draw_stock(1)
        claimed.discard(1, c("6H"))
        claimed.claim(2)  # two disjoint melds: 9C 9D 9S and JD QD KD
        events = claimed.claim_window_closed()
        outcomes = [e.outcome for e in events if e.type == "claim_resolved"]  # type: ignore[attr-defined]
        assert outcomes == (["burned"] if plain else ["closed"])


def test_deadline_tokens_mark_stale_timers() -> None:
    match = play()
    first = match.current_deadline()
    assert first is not None
    match.timeout(first.token)
    window = match.current_deadline()
    assert window is not None and window.token != first.token
    with pytest.raises(GameError) as error:
        match.timeout(first.token)
    assert error.value.code == "stale_deadline"


def test_snapshot_restore_round_trip() -> None:
    match = play()
    match.timeout()
    data = match.snapshot(include_history=True)
    again = restore(json.loads(json.dumps(data)))
    assert again.snapshot(include_history=True) == data
    assert again.state_hash() == match.state_hash()
    assert again.apply({"type": "claim_window_closed"}) == match.claim_window_closed()


def test_rule_3_a_snapshot_whose_deck_count_does_not_fit_its_seats_is_refused() -> None:
    data = play(4).snapshot(include_history=True)
    assert data["decks"] == 2
    with pytest.raises(GameError) as error:
        restore({**data, "decks": 4})
    assert error.value.code == "invalid_snapshot"


def refused_close(match, seat: int, partition, discard: int | None, code: str) -> None:  # type: ignore[no-untyped-def]
    """``close`` is refused with ``code`` and changes nothing; ``can_close`` agrees."""
    before = match.state_hash()
    with pytest.raises(GameError) as error:
        match.close(seat, partition, discard)
    assert error.value.code == code
    assert not match.can_close(seat, partition, discard)
    assert match.state_hash() == before


def test_rule_1_a_close_must_meld_every_card_but_the_discard() -> None:
    # two valid melds and a discard leave 9C 9D 9S out of the melds: not a close
    match = play(hands={1: cs("AH 2H 3H 4S 5S 6S 9C 9D KC")}, stock=cs("9S"))
    match.draw_stock(1)
    refused_close(match, 1, [cs("AH 2H 3H"), cs("4S 5S 6S")], c("KC"), "invalid_partition")
    refused_close(match, 1, [cs("AH 2H 3H"), cs("4S 5S 6S")], None, "invalid_partition")
    match.close(1, [cs("AH 2H 3H"), cs("4S 5S 6S"), cs("9C 9D 9S")], c("KC"))


def test_rule_1_a_close_uses_only_cards_of_the_hand() -> None:
    # every card of the hand is covered, but a fourth meld of cards the player does not hold
    # (and a discard it does not hold) is refused
    match = play(hands={1: cs("AH 2H 3H 4S 5S 6S 9C 9D KC")}, stock=cs("9S"))
    match.draw_stock(1)
    melds = [cs("AH 2H 3H"), cs("4S 5S 6S"), cs("9C 9D 9S")]
    refused_close(match, 1, [*melds, cs("JC JD JS")], c("KC"), "card_not_in_hand")
    refused_close(match, 1, melds, c("KS#1"), "card_not_in_hand")
    refused_close(match, 1, None, c("KS#1"), "card_not_in_hand")


def test_rule_1_a_full_close_is_refused_where_the_preset_does_not_allow_it() -> None:
    # under meld_shape any the ten cards fit in melds (3 + 3 + 4); without full_close_allowed
    # the player must still discard one; with it, the same partition closes with no discard
    hands = {1: cs("AH 2H 3H 4S 5S 6S 9C 9D 9H")}
    full = [cs("AH 2H 3H"), cs("4S 5S 6S"), cs("9C 9D 9H 9S")]
    match = play(hands=hands, stock=cs("9S"), options={"meld_shape": "any"})
    match.draw_stock(1)
    refused_close(match, 1, full, None, "full_close_not_allowed")
    refused_close(match, 1, full, c("KS#1"), "card_not_in_hand")
    closed = next(e for e in match.close(1) if e.type == "closed")
    assert closed.discard is not None and not closed.full  # type: ignore[attr-defined]
    allowed = play(
        hands=hands, stock=cs("9S"), options={"meld_shape": "any", "full_close_allowed": True}
    )
    allowed.draw_stock(1)
    refused_close(allowed, 1, full, c("KS#1"), "card_not_in_hand")
    closed = next(e for e in allowed.close(1, full) if e.type == "closed")
    assert closed.discard is None and closed.full  # type: ignore[attr-defined]


def test_rule_1_a_client_partition_may_not_use_a_plain_wild_as_a_joker() -> None:
    # vira 5H: 6H is wild; under wild_from_discard_is_plain the 6H seat 2 took from the pile
    # is only a 6H, so it cannot stand for the 3S of AS 2S 3S
    hands = {1: cs("6H 2D 3S#1 4H 5D 7S 8H 10C JC"), 2: cs("AS 2S 9C 9D 9S JD QD KD 4C")}
    partition = [cs("AS 2S 6H"), cs("9C 9D 9S"), cs("JD QD KD")]
    for plain in (False, True):
        match = seat_two_takes_the_discarded_wild(hands, plain)
        if plain:
            refused_close(match, 2, partition, c("4C"), "invalid_partition")
        else:
            match.close(2, partition, c("4C"))
