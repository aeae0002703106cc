"""The wording and arithmetic of ``raiz demo``'s report."""

from __future__ import annotations

from app.demo.report import RoundFacts, balance_lines, brl, percent, round_facts, round_line


def test_money_and_rates_are_spelled_out():
    assert brl(500) == "R$ 5.00"
    assert brl(123_456_789) == "R$ 1,234,567.89"
    assert brl(-5) == "-R$ 0.05"
    assert brl(1_300, sign=True) == "+R$ 13.00"
    assert brl(-500, sign=True) == "-R$ 5.00"
    assert percent(1_000) == "10.00 %"
    assert percent(1_234) == "12.34 %"


def test_round_facts_follow_each_entry_to_its_own_round():
    entries = [
        ("event", {"type": "match_started", "seq": 0}),
        ("chance", {"kind": "first_dealer", "round": 1, "value": 2}),
        ("event", {"type": "round_started", "round": 1, "dealer": 2}),
        ("chance", {"kind": "deal", "round": 1, "value": [3, 1, 2, 0]}),
        ("event", {"type": "decisions_revealed", "round": 1, "mandar": [0, 1], "ran": [2]}),
        ("input", {"type": "close", "seat": 1}),
        ("event", {"type": "closed", "round": 1, "out_of_turn": True, "claimed_card": 57}),
        (
            "event",
            {
                "type": "round_ended",
                "round": 1,
                "result": "closed",
                "winner": 1,
                "lives": [1, 3, 2],
            },
        ),
        # the transaction that ends round 1 starts round 2 (logged in round 1's chain)
        ("event", {"type": "round_started", "round": 2, "dealer": 0}),
        ("chance", {"kind": "deal", "round": 2, "value": [0, 1, 2, 3]}),
        ("chance", {"kind": "reshuffle", "round": 2, "value": [1, 0]}),
    ]
    rounds = round_facts(entries)
    first, second = rounds[1], rounds[2]
    assert (first.dealer, first.first_dealer, first.deal) == (2, 2, [3, 1, 2, 0])
    assert (first.played, first.ran, first.winner, first.lives) == ([0, 1], [2], 1, [1, 3, 2])
    assert first.out_of_turn and first.claimed_card == 57
    assert (second.dealer, second.deal, second.reshuffles) == (0, [0, 1, 2, 3], [[1, 0]])
    lines = round_line(first, {0: "ana", 1: "bruno", 2: "carla"}, width=5)
    assert lines[0] == "   1  dealer carla  played: ana, bruno  ran: carla"
    assert lines[1] == "      -> bruno closed (bateu), out of turn with 6C (bater fora da vez)"
    assert lines[2] == "      lives: ana 1  bruno 3  carla 2"
    assert round_line(RoundFacts(3), {}, 3)[1] == "      -> not finished"


def test_balances_show_the_change_and_whether_it_is_right():
    lines = balance_lines(
        ["ana", "bruno"],
        [2_000, 2_000],
        [1_500, 3_300],
        [1_500, 3_200],
        ["entry paid", "entry paid, net prize won"],
    )
    assert lines[1].endswith("-R$ 5.00  entry paid  ok")
    assert "+R$ 13.00" in lines[2] and lines[2].endswith("WRONG (expected R$ 32.00)")
