"""Canonical JSON: the fast encoder writes the definition's bytes, floats are refused."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.games import canonical
from app.games.canonical import (
    canonical_json,
    canonical_json_unchecked,
    reference_canonical_json,
)

# Every code point but the surrogates (which UTF-8 cannot hold): control characters, quotes,
# backslashes, U+2028, astral characters...
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | TEXT
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=5).map(tuple)
        | st.dictionaries(TEXT, inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=2000)
@given(VALUES)
def test_the_fast_encoder_writes_the_definitions_bytes(value: Any) -> None:
    expected = reference_canonical_json(value)
    assert canonical_json_unchecked(value) == expected
    assert canonical_json(value) == expected


def test_the_fast_encoder_is_the_one_in_use() -> None:
    # the speed claim of the benchmarks rests on it: msgspec is a dependency
    assert canonical._ENCODE is not None


@pytest.mark.parametrize(
    "value",
    [1.5, {"a": [1, {"b": 2.0}]}, (1, float("nan")), {"x": float("inf")}, [[[-0.0]]]],
)
def test_writers_refuse_floats_anywhere(value: Any) -> None:
    with pytest.raises(TypeError):
        canonical_json(value)


def test_non_string_keys_fall_back_to_the_definition() -> None:
    # msgspec cannot sort integer keys; the definition decides (json turns them into strings)
    assert canonical_json_unchecked({2: "b", 1: "a"}) == b'{"1":"a","2":"b"}'
    with pytest.raises(TypeError):
        canonical_json({2: "b"})
    with pytest.raises(TypeError):
        canonical_json_unchecked({1: "a", "b": 2})  # json cannot sort mixed keys either


def test_a_float_in_stored_data_never_hashes_like_the_float_free_original() -> None:
    # the verifier's unchecked path: a float token cannot appear in a float-free encoding
    original = {"card": 1, "seat": 2}
    for tampered in ({"card": 1.0, "seat": 2}, {"card": 1e16, "seat": 2}):
        assert canonical_json_unchecked(tampered) != canonical_json(original)
        assert reference_canonical_json(tampered) != canonical_json(original)


def test_without_msgspec_the_definition_runs() -> None:
    # an offline verifier that installed only `cryptography`
    code = (
        "import sys; sys.modules['msgspec'] = None\n"
        "from app.games import canonical\n"
        "assert canonical._ENCODE is None\n"
        "print(canonical.canonical_json({'b': [1, (2, 3)], 'a': 'é'}).decode())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == {"a": "é", "b": [1, [2, 3]]}
    assert out.strip() == '{"a":"é","b":[1,[2,3]]}'
