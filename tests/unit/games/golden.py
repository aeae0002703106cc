"""The engine's recorded answers: what ``tests/unit/games/test_golden.py`` holds every later
version of the rules engine to.

Compliance re-executes stored rounds years after they were played (docs/compliance.md), so
for the same inputs the engine must produce the same events, byte for byte, in every later
version -- a speed-up or a refactoring that changes one event (a different partition found
for a close, say) would make honest stored rounds fail verification. The file
``tests/data/engine-golden.json.gz`` keeps, per option variant and table size, one match's
recorded inputs with the SHA-256 of its events and its final state hash, and a set of hands
with the solver's answers (``find_close``, ``closing_discards``, ``has_two_disjoint_melds``:
what ``raiz rules check-hand`` reports in an "I could have closed" dispute).

The inputs are stored, not regenerated: the bots and the simulation's chance stream may
change freely. Regenerate the file only for a deliberate rule change, which is also a new
engine version for stored rounds::

    python -m tests.unit.games.golden
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from pathlib import Path
from typing import Any

from app.games import (
    CachetaMatch,
    HeuristicBot,
    closing_discards,
    find_close,
    has_two_disjoint_melds,
    play_match,
    resolve_options,
    stand_in_chance_factory,
)
from app.games.canonical import canonical_json
from app.games.cards import CARDS_PER_DECK, wild_ids
from app.games.melds import MeldRules

GOLDEN_PATH = Path(__file__).resolve().parents[2] / "data" / "engine-golden.json.gz"

VARIANTS: tuple[dict[str, Any], ...] = (
    {},
    {"ace_high": True},
    {"meld_shape": "any"},
    {"meld_shape": "any", "full_close_allowed": True},
    {"meld_shape": "any", "wilds_per_meld": 2},
    {"wilds_per_meld": 0},
    {"wild_scope": "all_suits"},
    {"wild_scope": "same_color", "lives": 3},
)
"""Option overrides of ``cacheta-raiz``: each is recorded at 2, 3 and 4 seats."""

HANDS_PER_VARIANT = 400


def events_digest(match: CachetaMatch) -> str:
    """SHA-256 over the canonical JSON of every event of ``match``, in order."""
    digest = hashlib.sha256()
    for event in match.events:
        digest.update(canonical_json(event.to_dict()))
        digest.update(b"\n")
    return digest.hexdigest()


def solver_answers(hand: list[int], wilds: frozenset[int], rules: MeldRules) -> dict[str, Any]:
    """The solver's answers for a hand after the draw (and for the hand less its last card)."""
    found = find_close(hand, wilds, rules)
    return {
        "find_close": None
        if found is None
        else {"melds": [list(meld) for meld in found.melds], "discard": found.discard},
        "closing_discards": list(closing_discards(hand, wilds, rules)),
        "two_melds": has_two_disjoint_melds(hand[:-1], wilds, rules),
    }


def _hands(rng: random.Random, vira_pool: int, wild_scope: str) -> list[dict[str, Any]]:
    """Random hands after the draw, with wild cards and near-melds more often than chance."""
    cases = []
    for _ in range(HANDS_PER_VARIANT):
        vira = rng.randrange(vira_pool)
        wilds = wild_ids(vira, wild_scope, 2)
        hand = rng.sample([card for card in range(vira_pool) if card != vira], 10)
        spare = sorted(card for card in wilds if card not in hand)
        rng.shuffle(spare)
        for index in range(min(rng.randrange(4), len(spare))):
            hand[index] = spare[index]
        for _ in range(rng.randrange(6)):  # neighbours and same faces make melds likely
            near = hand[rng.randrange(10)] + rng.choice((1, -1, 13, -13, CARDS_PER_DECK))
            if 0 <= near < vira_pool and near not in hand and near != vira:
                hand[rng.randrange(10)] = near
        cases.append({"vira": vira, "hand": hand})
    return cases


def build() -> dict[str, Any]:
    """Record the matches and hands with the current engine."""
    matches = []
    hands = []
    for index, overrides in enumerate(VARIANTS):
        options = resolve_options("cacheta-raiz", overrides)
        for seats in (2, 3, 4):
            match = play_match(
                options,
                seats,
                stand_in_chance_factory(2026, index * 10 + seats),
                [HeuristicBot(seat, tie_break=index) for seat in range(seats)],
            )
            matches.append(
                {
                    "options": overrides,
                    "seats": seats,
                    "inputs": [action.to_dict() for action in match.inputs],
                    "events": len(match.events),
                    "events_sha256": events_digest(match),
                    "state_hash": match.state_hash(),
                }
            )
        rules = MeldRules.from_options(options)
        for case in _hands(random.Random(index), 2 * CARDS_PER_DECK, options.wild_scope):
            wilds = wild_ids(case["vira"], options.wild_scope, 2)
            hands.append(
                {"options": overrides, **case, **solver_answers(case["hand"], wilds, rules)}
            )
    return {"format": "raiz-engine-golden/1", "matches": matches, "hands": hands}


def load() -> dict[str, Any]:
    """The recorded answers."""
    with gzip.open(GOLDEN_PATH, "rt", encoding="utf-8") as stream:
        data: dict[str, Any] = json.load(stream)
    return data


def main() -> None:
    data = build()
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    # mtime=0: the same answers give the same bytes
    GOLDEN_PATH.write_bytes(gzip.compress(text.encode(), mtime=0))
    size = GOLDEN_PATH.stat().st_size
    inputs = sum(len(match["inputs"]) for match in data["matches"])
    print(
        f"wrote {GOLDEN_PATH} ({size:,} bytes): {len(data['matches'])} matches, "
        f"{inputs:,} inputs, {len(data['hands'])} hands"
    )


if __name__ == "__main__":
    main()
