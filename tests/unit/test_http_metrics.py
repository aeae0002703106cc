"""The HTTP request metrics tell load shedding (503 ``service_busy``) and a 5xx given on
purpose (a readiness probe's "not ready") from server errors: only bugs count in
``<prefix>_requests_error_total``, which the 5xx alerts use."""

from __future__ import annotations

import pytest
from litestar import Litestar, Request, Response, get
from litestar.plugins.prometheus import PrometheusConfig
from litestar.testing import TestClient
from prometheus_client import REGISTRY, generate_latest
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from app.api.middleware import HttpMetricsMiddleware
from app.errors import answer_5xx_on_purpose, exception_handlers

PREFIX = "unit_http"
"""Not ``raiz_``: the service's metrics reference lists exactly the ``raiz_`` metrics."""


@get("/ok", sync_to_thread=False)
def ok() -> str:
    return "ok"


@get("/busy", sync_to_thread=False)
def busy() -> str:
    raise PoolTimeoutError("QueuePool limit reached")


@get("/bug", sync_to_thread=False)
def bug() -> str:
    raise RuntimeError("a bug")


@get("/not-ready", sync_to_thread=False)
def not_ready(request: Request) -> Response[str]:
    answer_5xx_on_purpose(request)
    return Response("not ready", status_code=503)


def _app() -> Litestar:
    config = PrometheusConfig(
        app_name="unit", prefix=PREFIX, group_path=True, middleware_class=HttpMetricsMiddleware
    )
    return Litestar(
        route_handlers=[ok, busy, bug, not_ready],
        middleware=[config.middleware],
        exception_handlers=exception_handlers(),
    )


def _count(kind: str, path: str, status: int) -> float:
    labels = {"app_name": "unit", "method": "GET", "path": path, "status_code": str(status)}
    return REGISTRY.get_sample_value(f"{PREFIX}_requests{kind}_total", labels) or 0.0


def test_shedding_is_counted_as_shed_and_a_bug_as_a_server_error():
    answers = (("/ok", 200), ("/busy", 503), ("/bug", 500))
    kinds = ("", "_shed", "_error")  # every request, shed, server error
    before = {(kind, *answer): _count(kind, *answer) for kind in kinds for answer in answers}
    with TestClient(app=_app()) as client:
        assert client.get("/ok").status_code == 200
        # the counters the alerts use exist from the first request, before any error
        assert f"# TYPE {PREFIX}_requests_error_total counter" in generate_latest().decode()
        shed = client.get("/busy")
        assert shed.status_code == 503 and shed.json()["code"] == "service_busy"
        assert client.get("/bug").status_code == 500
    expected = dict.fromkeys(before, 0.0)
    expected |= {
        ("", "/ok", 200): 1,
        ("", "/busy", 503): 1,
        ("", "/bug", 500): 1,
        ("_shed", "/busy", 503): 1,
        ("_error", "/bug", 500): 1,
    }
    assert {key: _count(*key) - value for key, value in before.items()} == expected


def test_the_middleware_refuses_options_it_does_not_support():
    from litestar.exceptions import ImproperlyConfiguredException

    config = PrometheusConfig(
        prefix=PREFIX, excluded_http_methods=["HEAD"], middleware_class=HttpMetricsMiddleware
    )
    with pytest.raises(ImproperlyConfiguredException):
        HttpMetricsMiddleware(ok, config)


def test_a_5xx_given_on_purpose_is_not_a_server_error():
    before = {kind: _count(kind, "/not-ready", 503) for kind in ("", "_shed", "_error")}
    with TestClient(app=_app()) as client:
        assert client.get("/not-ready").status_code == 503
    after = {kind: _count(kind, "/not-ready", 503) for kind in ("", "_shed", "_error")}
    assert {kind: after[kind] - before[kind] for kind in before} == {
        "": 1,
        "_shed": 0,
        "_error": 0,
    }
