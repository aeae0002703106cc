"""The engine still gives the recorded answers (``tests/unit/games/golden.py`` says why)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.games import replay, resolve_options
from app.games.cards import wild_ids
from app.games.melds import MeldRules

from .golden import VARIANTS, events_digest, load, solver_answers

GOLDEN = load()

CHANGED = (
    "the engine no longer reproduces a recorded {what}: stored rounds would fail "
    "verification. A deliberate rule change is a new engine version (see tests/unit/games/"
    "golden.py); a speed-up or refactoring must give the same answers"
)


def _key(overrides: dict[str, object]) -> str:
    return json.dumps(overrides, sort_keys=True)


def test_the_recording_covers_every_variant_and_table_size() -> None:
    recorded = {(_key(match["options"]), match["seats"]) for match in GOLDEN["matches"]}
    assert recorded == {(_key(variant), seats) for variant in VARIANTS for seats in (2, 3, 4)}
    assert sum(1 for hand in GOLDEN["hands"] if hand["find_close"]) >= 100
    assert sum(1 for match in GOLDEN["matches"] for i in match["inputs"] if i["type"] == "claim")


@pytest.mark.parametrize(
    "recorded", GOLDEN["matches"], ids=lambda m: f"{m['options'] or 'raiz'}-{m['seats']}"
)
def test_recorded_inputs_replay_to_the_recorded_events(recorded: dict[str, Any]) -> None:
    options = resolve_options("cacheta-raiz", recorded["options"])
    match = replay(options, recorded["seats"], recorded["inputs"])
    assert match.over
    assert len(match.events) == recorded["events"], CHANGED.format(what="event count")
    assert events_digest(match) == recorded["events_sha256"], CHANGED.format(what="event list")
    assert match.state_hash() == recorded["state_hash"], CHANGED.format(what="final state")


def test_the_solver_gives_the_recorded_answers() -> None:
    rules_of: dict[str, tuple[MeldRules, str]] = {}
    for case in GOLDEN["hands"]:
        key = _key(case["options"])
        if key not in rules_of:
            options = resolve_options("cacheta-raiz", case["options"])
            rules_of[key] = (MeldRules.from_options(options), options.wild_scope)
        rules, scope = rules_of[key]
        answers = solver_answers(case["hand"], wild_ids(case["vira"], scope, 2), rules)
        expected = {name: case[name] for name in answers}
        assert answers == expected, CHANGED.format(what=f"solver answer for {case}")
