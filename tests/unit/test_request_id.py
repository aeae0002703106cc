"""The request id: a client's id is echoed only when well-formed, otherwise a fresh one."""

from __future__ import annotations

import pytest
from litestar import Litestar, get
from litestar.testing import TestClient

from app.api.middleware import REQUEST_ID_HEADER, RequestContextMiddleware


@get("/ok", sync_to_thread=False)
def ok() -> str:
    return "ok"


def _answered_id(supplied: str) -> str:
    app = Litestar(route_handlers=[ok], middleware=[RequestContextMiddleware])
    with TestClient(app) as client:
        response = client.get("/ok", headers={REQUEST_ID_HEADER: supplied})
    assert response.status_code == 200
    return response.headers[REQUEST_ID_HEADER]


@pytest.mark.parametrize("supplied", ["a" * 8, "Z" * 64, "abc._-XYZ09"])
def test_a_well_formed_request_id_is_echoed(supplied: str) -> None:
    assert _answered_id(supplied) == supplied


@pytest.mark.parametrize(
    "supplied",
    ["", "abcdefg", "a" * 65, "has a space", "semi;colon", "back\\slash-id", "plus+sign-id"],
)
def test_any_other_request_id_is_replaced_by_a_fresh_one(supplied: str) -> None:
    answered = _answered_id(supplied)
    assert answered != supplied
    assert len(answered) == 32 and int(answered, 16) >= 0
