"""The RNG service's argument checks at their edges (pure: rng.contract)."""

from __future__ import annotations

import pytest

from rng.contract import (
    MAX_CONTRIBUTOR_LENGTH,
    MAX_FIXED_DRAW,
    RngErrorCode,
    RngServiceError,
    check_contributor,
    check_script,
)
from rng.shuffle import MAX_PERMUTATION_SIZE


@pytest.mark.parametrize("contributor", ["!", "~" * MAX_CONTRIBUTOR_LENGTH, "seat-0", "a~!z"])
def test_contributors_of_1_to_64_visible_characters_are_accepted(contributor: str) -> None:
    assert check_contributor(contributor) == contributor


@pytest.mark.parametrize(
    "contributor", ["", "x" * (MAX_CONTRIBUTOR_LENGTH + 1), " ", "a b", "\x7f", "tab\t", b"ana"]
)
def test_other_contributors_are_refused(contributor: object) -> None:
    with pytest.raises(RngServiceError) as caught:
        check_contributor(contributor)
    assert caught.value.code is RngErrorCode.CONTRIBUTOR_INVALID


@pytest.mark.parametrize(
    ("permutation", "draw"),
    [
        (None, 0),
        (None, MAX_FIXED_DRAW),
        ([0], None),
        (list(range(MAX_PERMUTATION_SIZE))[::-1], None),
    ],
)
def test_scripts_at_the_edges_are_accepted(permutation: list[int] | None, draw: int | None) -> None:
    expected = permutation if draw is None else draw
    assert check_script(permutation, draw) == expected


@pytest.mark.parametrize(
    ("permutation", "draw"),
    [
        (None, None),
        ([0], 0),
        (None, -1),
        (None, MAX_FIXED_DRAW + 1),
        (None, True),
        (None, 1.0),
        ([], None),
        (list(range(MAX_PERMUTATION_SIZE + 1)), None),
        ([1], None),
        ([0, 0], None),
        ([0, True], None),
        ([True, 0], None),
        ([0.0], None),
        ((0,), None),
    ],
)
def test_other_scripts_are_refused(permutation: object, draw: object) -> None:
    with pytest.raises(RngServiceError) as caught:
        check_script(permutation, draw)
    assert caught.value.code is RngErrorCode.FIXED_STREAM_INVALID


def test_an_accepted_permutation_is_a_copy() -> None:
    scripted = [1, 0]
    result = check_script(scripted, None)
    scripted.append(2)
    assert result == [1, 0]
