"""How a database's recorded migration revisions compare with this code's."""

from __future__ import annotations

import pytest

from app.db.migrate import SchemaRevisions, schema_revisions, schema_status

REVISIONS = SchemaRevisions(
    heads=frozenset({"game_3", "ledger_2", "rng_1"}),
    known=frozenset({"game_1", "game_2", "game_3", "ledger_1", "ledger_2", "rng_1"}),
)


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [
        ({"game_3", "ledger_2", "rng_1"}, "ok"),
        (set(), "missing"),
        ({"game_2", "ledger_2", "rng_1"}, "outdated"),  # a branch behind its head
        ({"game_3", "ledger_2"}, "outdated"),  # a branch never applied
        ({"game_1"}, "outdated"),
        ({"game_9", "ledger_2", "rng_1"}, "newer"),  # a newer release's game revision
        ({"game_3", "ledger_2", "rng_1", "audit_1"}, "newer"),  # a newer release's branch
        ({"game_9", "ledger_2"}, "outdated"),  # newer game, but rng never applied
        ({"game_9", "ledger_1", "rng_1"}, "outdated"),  # newer game, ledger behind
    ],
)
def test_schema_status(recorded, expected):
    assert schema_status(frozenset(recorded), REVISIONS) == expected


def test_this_codes_revisions_have_one_head_per_branch():
    revisions = schema_revisions()
    assert {head.split("_", 1)[0] for head in revisions.heads} == {
        "game",
        "ledger",
        "rng",
        "compliance",
    }
    assert revisions.heads <= revisions.known
