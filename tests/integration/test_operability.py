"""Health probes, Prometheus metrics, OpenAPI, request ids and JSON logs."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.asyncio


async def test_health_probes(client):
    live = await client.get("/health/live")
    assert live.status_code == 200 and live.json() == {"status": "ok"}
    ready = await client.get("/health/ready")
    assert ready.status_code == 200 and ready.json()["database"] == "ok"


async def test_ready_reports_503_when_the_database_is_gone(pg_server_url):
    from litestar.testing import AsyncTestClient
    from sqlalchemy.engine import make_url

    from app.main import create_app
    from tests.conftest import make_settings

    missing = make_url(pg_server_url).set(database="raiz_does_not_exist").render_as_string(False)
    async with AsyncTestClient(app=create_app(make_settings(missing))) as client:
        response = await client.get("/health/ready")
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"


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


async def test_request_id_is_echoed_or_generated(client):
    echoed = await client.get("/health/live", headers={"X-Request-ID": "abc12345-test"})
    assert echoed.headers["x-request-id"] == "abc12345-test"
    generated = await client.get("/health/live", headers={"X-Request-ID": "bad id"})
    assert len(generated.headers["x-request-id"]) == 32
