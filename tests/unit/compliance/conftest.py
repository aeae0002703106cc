"""A recorded bot match's dispute bundle, for the verifier tests."""

from __future__ import annotations

import copy

import pytest

from app.compliance.synthetic import synthetic_bundle
from app.games import resolve_options
from tests.unit.compliance.support import SIGNER


@pytest.fixture(scope="module")
def pristine() -> dict:
    bundle = synthetic_bundle(resolve_options("cacheta-raiz", {"lives": 4}), 4, SIGNER, index=3)
    assert len(bundle["rounds"]) >= 3
    return bundle


@pytest.fixture
def bundle(pristine) -> dict:
    return copy.deepcopy(pristine)
