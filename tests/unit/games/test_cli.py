"""``raiz rules check-hand`` and ``raiz simulate`` (click commands, tested with CliRunner)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from app.games.cli import make_simulate_command, rules_group, simulate_command
from app.games.simulate import stream_chance_factory

from .support import RandomChance


def words(text: str) -> list[str]:
    return text.split()


EXAMPLE = words("AH 2H 3H 4S 5S 6S 9C 9D 9H KD")


def check(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(rules_group, ["check-hand", *args], input=stdin)
    return result.exit_code, result.output


def test_check_hand_issue_example() -> None:
    code, output = check("--preset", "cacheta-raiz", "--vira", "5H", *EXAMPLE)
    assert code == 0
    assert json.loads(output) == {
        "can_close": True,
        "full_close": False,
        "discards": ["KD"],
        "melds": [["9C", "9H", "9D"], ["AH", "2H", "3H"], ["4S", "5S", "6S"]],
    }
    assert output.count("\n") == 1  # one JSON object


def test_check_hand_vira_is_optional_and_makes_the_wild() -> None:
    hand = words("AH 2H 3H 4S 5S 6S 9C 9D 6H KD")  # 6H stands in for a nine with vira 5H
    assert json.loads(check("--vira", "5h", *hand)[1])["can_close"] is True
    assert json.loads(check(*hand)[1]) == {
        "can_close": False,
        "full_close": False,
        "discards": [],
        "melds": [],
    }


def test_check_hand_lists_each_closing_discard_once_sorted() -> None:
    # a run of four: either end may go, listed in card order
    hand = words("AH 2H 3H 4H 5S 6S 7S 9C 9D 9S")
    assert json.loads(check(*hand)[1])["discards"] == ["AH", "4H"]
    # identical twins: either closes, listed once
    twins = words("2C 3C 4C 5S 6S 7S 9C 9D 9H 9H")
    assert json.loads(check(*twins)[1])["discards"] == ["9H"]


def test_check_hand_option_overrides() -> None:
    qka = words("QH KH AH 4S 5S 6S 9C 9D 9H 2D")
    assert json.loads(check(*qka)[1])["can_close"] is True
    assert json.loads(check("--option", "ace_high=false", *qka)[1])["can_close"] is False
    four_five = words("2C 3C 4C 5C 8D 9D 10D JD QD KS")
    assert json.loads(check(*four_five)[1])["can_close"] is False
    assert json.loads(check("--option", "meld_shape=any", *four_five)[1])["discards"] == ["KS"]
    full = words("2C 3C 4C 5C 8D 9D 10D JD QD KD")
    answer = json.loads(
        check("--option", "meld_shape=any", "--option", "full_close_allowed=true", *full)[1]
    )
    assert answer["full_close"] is True and answer["can_close"] is True
    eleven = words("2C 3C 4C 5C 8D 9D 10D JD QD KD 7H")
    answer = json.loads(
        check("--preset", "cacheta-classic", "--option", "hand_size=10", *eleven)[1]
    )
    assert answer["discards"] == ["7H"]
    wide = words("9C 9D 6D AH 2H 3H 4S 5S 6S KC")
    assert json.loads(check("--vira", "5H", *wide)[1])["can_close"] is False
    assert json.loads(check("--vira", "5H", "--option", "wild_scope=same_color", *wide)[1])[
        "discards"
    ] == ["KC"]
    jokers = words("9C 6H 6H AH 2H 3H 4S 5S 6S KC")
    assert json.loads(check("--vira", "5H", *jokers)[1])["can_close"] is False
    assert json.loads(check("--vira", "5H", "--option", "wilds_per_meld=2", *jokers)[1])[
        "can_close"
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["AH", "2H", "3H", "4S", "5S", "6S", "9C", "9D", "9X", "KD"],
        ["--option", "colour=red", *EXAMPLE],
        ["--option", "ace_high=maybe", *EXAMPLE],
        ["--option", "hand_size=10", *EXAMPLE],
        ["--preset", "nope", *EXAMPLE],
        EXAMPLE[:9],
        ["--vira", "1H", *EXAMPLE],
    ],
)
def test_check_hand_bad_input_exits_2_with_one_line(args: list[str]) -> None:
    result = CliRunner().invoke(rules_group, ["check-hand", *args])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and result.output.startswith("error: ")


def test_check_hand_batch_answers_one_line_per_case() -> None:
    lines = [
        json.dumps({"preset": "cacheta-raiz", "vira": "5H", "hand": EXAMPLE}),
        json.dumps({"hand": EXAMPLE[:3]}),
        "not json",
        json.dumps({"preset": "cacheta-raiz", "hand": EXAMPLE, "options": {"ace_high": False}}),
    ]
    code, output = check("--batch", stdin="\n".join(lines) + "\n")
    assert code == 0
    answers = [json.loads(line) for line in output.splitlines()]
    assert len(answers) == 4
    assert answers[0]["discards"] == ["KD"] and answers[3]["can_close"] is True
    assert "error" in answers[1] and answers[1]["code"] == "invalid_hand"
    assert "error" in answers[2]


def simulate(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(simulate_command, list(args))
    return result.exit_code, result.output.splitlines()


def test_simulate_same_seed_same_output_but_the_speed_line() -> None:
    code, first = simulate(
        "--preset", "cacheta-raiz", "--players", "4", "--matches", "5", "--seed", "1"
    )
    assert code == 0
    _, again = simulate(
        "--preset", "cacheta-raiz", "--players", "4", "--matches", "5", "--seed", "1"
    )
    _, other = simulate("--players", "4", "--matches", "5", "--seed", "2")
    assert first[:-1] == again[:-1] and first[-1].startswith("rounds/s: ")
    assert first[:-1] != other[:-1]
    labels = [line.split(":")[0] for line in first]
    for needed in (
        "rounds",
        "closes",
        "out-of-turn closes",
        "burns",
        "all-ran annulments",
        "one-player-left wins",
        "average turns per round",
        "average turns per played round",
        "rounds/s",
    ):
        assert needed in labels


def test_simulate_bad_input_exits_2() -> None:
    assert simulate("--preset", "pife-classic", "--matches", "1")[0] == 2
    assert simulate("--players", "11", "--matches", "1")[0] == 2
    assert simulate("--option", "lives=0", "--matches", "1")[0] == 2


def test_simulate_takes_any_chance_source_factory() -> None:
    class Stream:
        def __init__(self, seed: bytes, label: str) -> None:
            self.chance = RandomChance(int.from_bytes(seed[:8], "big") + sum(label.encode()))

        def randbelow(self, n: int) -> int:
            return self.chance.randbelow(0, "", n)

        def permutation(self, n: int) -> list[int]:
            return self.chance.permutation(0, "", n)

    command = make_simulate_command(stream_chance_factory(Stream))
    result = CliRunner().invoke(command, ["--matches", "2", "--players", "3"])
    assert result.exit_code == 0 and "rounds: " in result.output
