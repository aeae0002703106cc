"""Who keeps a frozen table (docs/tables.md, presence): RULES.md §3's connected player; of
several connected players all away, the one who acted last; with nobody connected, the one
seen last; the lower seat on any tie."""

from __future__ import annotations

import datetime as dt

from app.tables.timers import _Attendance

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def at(seconds: int) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def attendance(online, playing, seen=None, acted=None, alive=(0, 1, 2)) -> _Attendance:
    return _Attendance(
        alive=tuple(alive),
        online=list(online),
        playing=list(playing),
        seen=dict(seen or {}),
        acted=dict(acted or {}),
    )


def test_a_table_with_two_connected_players_one_playing_is_not_deserted():
    assert not attendance(online=[0, 1], playing=[1]).deserted


def test_a_table_with_one_connected_player_or_nobody_playing_is_deserted():
    assert attendance(online=[1], playing=[1]).deserted
    assert attendance(online=[], playing=[]).deserted
    assert attendance(online=[0, 1, 2], playing=[]).deserted


def test_a_match_down_to_one_living_player_is_never_frozen():
    assert not attendance(online=[], playing=[], alive=(2,)).deserted


def test_the_connected_player_keeps_the_table_away_or_not():
    assert attendance(online=[2], playing=[2], acted={0: at(9)}).keeper() == 2
    # away, but the only one connected (RULES.md §3): a player who left does not win
    assert attendance(online=[2], playing=[], acted={0: at(9), 2: at(1)}).keeper() == 2


def test_of_several_connected_players_all_away_the_last_to_act_keeps_it():
    acted = {0: at(1), 1: at(5), 2: at(3)}
    assert attendance(online=[0, 1, 2], playing=[], acted=acted).keeper() == 1
    # a disconnected player who acted later does not count
    assert attendance(online=[0, 2], playing=[], acted=acted).keeper() == 2
    # nobody acted: the lower seat
    assert attendance(online=[1, 2], playing=[]).keeper() == 1


def test_with_nobody_connected_the_player_seen_last_keeps_it():
    seen = {0: at(2), 1: at(7), 2: at(7)}
    assert attendance(online=[], playing=[], seen=seen, acted={0: at(9)}).keeper() == 1
