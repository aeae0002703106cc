"""Liveness and readiness probes."""

from __future__ import annotations

from typing import Any

import structlog
from litestar import Controller, MediaType, Response, get
from litestar.datastructures import State
from litestar.openapi.datastructures import ResponseSpec
from sqlalchemy import text

from app.accounts.auth import PUBLIC_OPT_KEY

__all__ = ("HealthController",)

logger = structlog.get_logger("raiz.health")


class HealthController(Controller):
    """``/health/live`` answers while the process runs; ``/health/ready`` checks the database."""

    path = "/health"
    tags = ["operations"]
    opt = {PUBLIC_OPT_KEY: True}

    @get("/live", operation_id="healthLive")
    async def live(self) -> dict[str, str]:
        """The process is up."""
        return {"status": "ok"}

    @get(
        "/ready",
        operation_id="healthReady",
        responses={503: ResponseSpec(data_container=dict[str, str], description="Not ready")},
    )
    async def ready(self, state: State) -> Response[dict[str, Any]]:
        """The process can serve requests: the database answers."""
        try:
            async with state.database.engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        except Exception as exc:
            # the probe is public: why the database failed goes to the log, not to the caller
            logger.warning("database_unavailable", error=type(exc).__name__, detail=str(exc))
            return Response(
                {"status": "unavailable", "database": "unavailable"},
                status_code=503,
                media_type=MediaType.JSON,
            )
        return Response({"status": "ok", "database": "ok"}, media_type=MediaType.JSON)
