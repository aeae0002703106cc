"""Health probes, Prometheus metrics, OpenAPI, request ids and JSON logs."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.asyncio


async def test_health_probes(client):
    live = await client.get("/health/live")
    assert live.status_code == 200 and live.json() == {"status": "ok"}
    ready = await client.get("/health/ready")
    assert ready.status_code == 200 and ready.json()["database"] == "ok"


async def test_ready_reports_503_when_the_database_is_gone(pg_server_url, capfd):
    from litestar.testing import AsyncTestClient
    from prometheus_client import REGISTRY
    from sqlalchemy.engine import make_url

    from app.main import create_app
    from tests.conftest import make_settings

    def errors() -> float:
        labels = {"app_name": "raiz", "method": "GET", "path": "/health/ready"}
        labels["status_code"] = "503"
        return REGISTRY.get_sample_value("raiz_http_requests_error_total", labels) or 0.0

    missing = make_url(pg_server_url).set(database="raiz_does_not_exist").render_as_string(False)
    before = errors()
    async with AsyncTestClient(app=create_app(make_settings(missing))) as client:
        response = await client.get("/health/ready")
    assert response.status_code == 503
    # "not ready" is the probe working, not a server error (the 5xx alerts count those)
    assert errors() == before
    # the public probe says what, not why: the driver's error goes to the operator's log
    assert response.json() == {"status": "unavailable", "database": "unavailable"}
    logged = [json.loads(line) for line in capfd.readouterr().err.splitlines() if line[:1] == "{"]
    failures = [entry for entry in logged if entry["event"] == "database_unavailable"]
    assert failures and "raiz_does_not_exist" in failures[0]["detail"]


async def test_metrics_expose_requests_latency_and_pool(client):
    await client.get("/health/live")
    await client.get("/auth/me")
    body = (await client.get("/metrics")).text
    assert 'raiz_http_requests_total{app_name="raiz",method="GET",path="/health/live"' in body
    assert 'status_code="401"' in body
    assert "raiz_http_request_duration_seconds_bucket" in body
    for gauge in ("raiz_db_pool_size", "raiz_db_pool_checked_out", "raiz_db_pool_capacity"):
        assert f"\n{gauge} " in body


async def test_openapi_schema_is_served_with_operation_ids(client):
    response = await client.get("/schema/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    operations = [
        operation
        for path in schema["paths"].values()
        for operation in path.values()
        if isinstance(operation, dict) and "responses" in operation
    ]
    assert operations
    assert all(operation.get("operationId") for operation in operations)
    assert "ErrorBody" in schema["components"]["schemas"]


async def test_unknown_paths_under_schema_get_the_json_error_shape(client):
    # Litestar's OpenAPI plugin answered them with an HTML page; every other unknown route
    # gets the API's error body.
    from tests.helpers import assert_error

    for path in ("/schema/nothing", "/schema/redoc", "/schema/openapi.yaml", "/schema/a/b"):
        response = await client.get(path)
        assert_error(response, 404, "not_found")
        assert response.headers["content-type"].startswith("application/json"), path
    assert_error(await client.get("/nothing"), 404, "not_found")
    # the documents themselves are still served
    for path in ("/schema", "/schema/swagger"):
        page = await client.get(path)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert (await client.get("/schema/openapi.json")).status_code == 200


async def test_request_id_is_echoed_or_generated(client):
    echoed = await client.get("/health/live", headers={"X-Request-ID": "abc12345-test"})
    assert echoed.headers["x-request-id"] == "abc12345-test"
    generated = await client.get("/health/live", headers={"X-Request-ID": "bad id"})
    assert len(generated.headers["x-request-id"]) == 32


async def test_an_exhausted_database_pool_answers_503_service_busy_and_changes_nothing(
    database_url,
):
    import asyncio
    import threading

    from litestar.testing import AsyncTestClient

    from app.main import create_app
    from tests.conftest import make_settings

    settings = make_settings(
        database_url, db_pool_size=1, db_max_overflow=0, db_pool_timeout_s=0.2, run_scheduler=False
    )
    app = create_app(settings)
    held, release = threading.Event(), threading.Event()

    async def hold_the_only_connection() -> None:  # runs on the app's own event loop
        async with app.state.database.engine.connect() as connection:
            await connection.exec_driver_sql("SELECT 1")
            held.set()
            while not release.is_set():
                await asyncio.sleep(0.01)

    signup = {"username": "busy", "password": "a long passphrase"}
    shed_paths = (("POST", "/auth/signup"), ("GET", "/wallet"))
    before = _http_counts(shed_paths, 503)
    async with AsyncTestClient(app=app) as client:
        holder = client.blocking_portal.start_task_soon(hold_the_only_connection)
        assert await asyncio.to_thread(held.wait, 10)
        try:
            refused = await client.post("/auth/signup", json=signup)
            unauthenticated = await client.get("/wallet", headers={"authorization": "Bearer x"})
        finally:
            release.set()
            await asyncio.to_thread(holder.result, 10)
        for response in (refused, unauthenticated):  # a route, and the authentication layer
            assert response.status_code == 503, response.text
            assert response.headers["retry-after"] == "1"
            assert response.json()["code"] == "service_busy"
        # Nothing was done: the same sign-up succeeds once a connection is free.
        again = await client.post("/auth/signup", json=signup)
        assert again.status_code == 201, again.text
        metrics = (await client.get("/metrics")).text
    assert 'path="/auth/signup",status_code="503"' in metrics
    # Load shedding is deliberate, not a bug: counted as shed, never as a server error (the
    # counter the 5xx alerts use), and still a 503 among the requests.
    after = _http_counts(shed_paths, 503)
    for key in shed_paths:
        delta = {name: after[key][name] - before[key][name] for name in after[key]}
        assert delta == {"requests": 1, "shed": 1, "error": 0}, (key, delta)


def _http_counts(
    routes: tuple[tuple[str, str], ...], status: int
) -> dict[tuple[str, str], dict[str, float]]:
    """The request, shed and server-error counts of each (method, path) answered ``status``."""
    from prometheus_client import REGISTRY

    counts = {}
    for method, path in routes:
        labels = {"app_name": "raiz", "method": method, "path": path, "status_code": str(status)}
        counts[method, path] = {
            name: REGISTRY.get_sample_value(f"raiz_http_requests{suffix}_total", labels) or 0.0
            for name, suffix in (("requests", ""), ("shed", "_shed"), ("error", "_error"))
        }
    return counts


async def test_table_sockets_are_not_counted_as_http_requests(client, settings):
    # A WebSocket was counted as a request answered 200 in 0 s when it closed (its status
    # and duration never reach the middleware), and as "in progress" while open: the
    # latency panel and the 5xx ratio mixed in every socket of every player.
    from tests.integration.tables.helpers import create_table, operator, player

    op = await operator(client, settings)
    _, token = await player(client, settings, "pia", 0, op)
    table = await create_table(client, token)
    socket_session = await client.websocket_connect(f"/tables/{table['id']}/ws?token={token}")
    with socket_session as socket:
        assert socket.receive_json(timeout=10)["type"] == "view"
        during = (await client.get("/metrics")).text
    after = (await client.get("/metrics")).text
    for body in (during, after):
        http = [line for line in body.splitlines() if line.startswith("raiz_http_")]
        assert http and not [line for line in http if "/ws" in line or "websocket" in line]


def _expand_optional(path: str) -> list[str]:
    """``/a[/{id}[/b]]`` -> ``/a``, ``/a/{id}``, ``/a/{id}/b``."""
    start = path.find("[")
    if start < 0:
        return [path]
    depth, end = 0, start
    for end in range(start, len(path)):
        depth += {"[": 1, "]": -1}.get(path[end], 0)
        if depth == 0:
            break
    head, inner, tail = path[:start], path[start + 1 : end], path[end + 1 :]
    return [head + tail] + [head + variant + tail for variant in _expand_optional(inner)]


def _readme_routes() -> set[str]:
    import re

    from tests.conftest import ROOT

    readme = (ROOT / "README.md").read_text()
    table = readme.split("## API at a glance", 1)[1].split("\n## ", 1)[0]
    routes = set()
    for row in table.splitlines():
        if not row.startswith("| `"):
            continue
        methods: list[str] = []
        root = ""
        for item in re.findall(r"`([^`]+)`", row.split(" | ", 1)[0]):
            verbs = "GET|POST|PUT|PATCH|DELETE"
            absolute = re.match(rf"^((?:{verbs}|WS)(?:/(?:{verbs}))*) (/\S*)$", item)
            if absolute:
                methods, path = absolute.group(1).split("/"), absolute.group(2)
                root = path
            elif item.startswith("…/"):
                path = root.rsplit("/", 1)[0] + item[1:]
            elif item.startswith("/{"):
                path = root.split("[", 1)[0] + item
            else:
                path = root.rsplit("/", 1)[0] + item
            for variant in _expand_optional(path.split("?", 1)[0].split("[?", 1)[0]):
                for method in methods:
                    routes.add(f"{method} {re.sub(r'{[^}]*}', '{}', variant)}")
    return routes


async def test_the_readme_api_table_lists_every_route_and_only_those(client):
    import re

    served = set()
    for route in client.app.routes:
        methods = sorted(set(getattr(route, "methods", None) or {"WS"}) - {"HEAD", "OPTIONS"})
        path = re.sub(r"{[^}]*}", "{}", route.path)
        if path.startswith("/schema/"):
            continue  # the OpenAPI document's renderings, under GET /schema
        served |= {f"{method} {path}" for method in methods}
    listed = _readme_routes()
    assert len(served) >= 45
    assert served - listed == set(), "routes missing from the README's API table"
    assert listed - served == set(), "the README's API table lists routes that do not exist"
