"""The bots' lazy view (``views.bot_view``) is the player view, read key by key or whole.

The simulator hands each bot a :class:`~app.games.views.LazyPlayerView` instead of the dict
``player_view(match, seat, hints=False)`` builds: the same keys, in the same order, with the
same values, computed when first read. These tests compare the two at every input of seeded
bot matches (``test_simulation_invariants`` compares them too, under random options).
"""

from __future__ import annotations

import copy
import json
import pickle
import random

import pytest

from app.games import HeuristicBot, new_match, player_view, resolve_options
from app.games.simulate import bot_step
from app.games.views import LazyPlayerView, StaleViewError, bot_view

from .support import RandomChance

OPTIONS = [
    {},
    {"lives": 1},
    {"wild_from_discard_is_plain": True, "discard_lock_identical": True},
    {"wild_scope": "all_suits", "wilds_per_meld": 2, "max_reshuffles": 0},
]


def _read_some(view: LazyPlayerView, expected: dict[str, object], rng: random.Random) -> None:
    """Read a random part of the view, key by key, as a bot would."""
    keys = list(expected)
    for key in rng.sample(keys, rng.randrange(len(keys) + 1)):
        assert view[key] == expected[key], key
    assert view.get("hand") is None and "hand" not in view  # a round key, not a view key
    current = view["round"]
    wanted = expected["round"]
    if current is None:
        assert wanted is None
        return
    assert isinstance(wanted, dict)
    round_keys = [*wanted, "mandar_count"]
    for key in rng.sample(round_keys, rng.randrange(len(round_keys) + 1)):
        assert (key in current) == (key in wanted), key
        assert current.get(key, "absent") == wanted.get(key, "absent"), key
        if key in wanted:
            assert current[key] == wanted[key], key
        else:
            with pytest.raises(KeyError):
                current[key]


@pytest.mark.parametrize("overrides", OPTIONS, ids=repr)
def test_bot_view_equals_the_player_view_at_every_input(overrides: dict[str, object]) -> None:
    options = resolve_options("cacheta-raiz", overrides)
    rng = random.Random(11)
    for seed in range(6):
        seats = rng.choice((2, 3, 4, 6))
        match = new_match(options, seats)
        chance = RandomChance(seed)
        bots = [HeuristicBot(seat, tie_break=seed) for seat in range(seats)]
        while not match.over:
            for seat in range(seats):
                expected = player_view(match, seat, hints=False)
                view = bot_view(match, seat)
                _read_some(view, expected, rng)
                if rng.random() < 0.5:  # whole-view use completes it: the same dict, same order
                    assert list(view) == list(expected)
                    if view["round"] is not None:
                        assert list(view["round"]) == list(expected["round"])
                assert view == expected and expected == view
                assert json.dumps(view) == json.dumps(expected)
            bot_step(match, chance, bots)


def _mid_round_match() -> object:
    match = new_match(resolve_options("cacheta-raiz"), 4)
    chance = RandomChance(3)
    bots = [HeuristicBot(seat) for seat in range(4)]
    while match.round is None or match.round.phase != "draw":
        bot_step(match, chance, bots)
    return match


def test_a_stale_bot_view_refuses_to_compute() -> None:
    match = _mid_round_match()
    view = bot_view(match, 0)
    assert view["round"]["hand"] == player_view(match, 0)["round"]["hand"]
    bot_step(match, RandomChance(3), [HeuristicBot(seat) for seat in range(4)])
    with pytest.raises(StaleViewError):
        view["deadline"]
    with pytest.raises(StaleViewError):
        dict(view)


def test_copies_of_a_bot_view_are_plain_dicts() -> None:
    match = _mid_round_match()
    expected = player_view(match, 2, hints=False)
    for made in (
        copy.copy(bot_view(match, 2)),
        copy.deepcopy(bot_view(match, 2)),
        pickle.loads(pickle.dumps(bot_view(match, 2))),
        bot_view(match, 2).copy(),
        dict(bot_view(match, 2)),
        {**bot_view(match, 2)},
    ):
        assert type(made) is dict
        assert made == expected
        assert list(made) == list(expected)
    view = bot_view(match, 2)
    view["round"] = None  # mutation first completes the view: then it is an ordinary dict
    assert len(view) == len(expected)
    assert view["deadline"] == expected["deadline"]
