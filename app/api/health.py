"""Liveness and readiness probes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
from litestar import Controller, MediaType, Request, Response, get
from litestar.datastructures import State
from litestar.openapi.datastructures import ResponseSpec
from litestar.status_codes import HTTP_200_OK, HTTP_503_SERVICE_UNAVAILABLE
from sqlalchemy import text

from app.accounts.auth import PUBLIC_OPT_KEY
from app.db.migrate import SchemaRevisions, schema_status
from app.errors import answer_5xx_on_purpose

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ("HealthController",)

logger = structlog.get_logger("raiz.health")

READY_SCHEMAS = frozenset({"ok", "newer"})
"""Schema statuses the service runs on (``newer``: a newer release migrated, additively)."""


async def _recorded_revisions(connection: AsyncConnection) -> frozenset[str]:
    """The revisions ``public.alembic_version`` records (none when it does not exist)."""
    exists = await connection.scalar(text("SELECT to_regclass('public.alembic_version')"))
    if exists is None:
        return frozenset()
    rows = await connection.scalars(text("SELECT version_num FROM public.alembic_version"))
    return frozenset(rows)


def _answer(*, ready: bool, **fields: str) -> Response[dict[str, Any]]:
    return Response(
        {"status": "ok" if ready else "unavailable", **fields},
        status_code=HTTP_200_OK if ready else HTTP_503_SERVICE_UNAVAILABLE,
        media_type=MediaType.JSON,
    )


class HealthController(Controller):
    """``/health/live`` answers while the process runs; ``/health/ready`` checks the database
    and that its migrations are this code's."""

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
    async def ready(
        self, request: Request[Any, Any, Any], state: State
    ) -> Response[dict[str, Any]]:
        """The process can serve requests: the database answers and records every migration
        this code needs (``schema``: ``ok``, or ``newer`` when a newer release migrated it;
        503 with ``missing`` or ``outdated`` otherwise).  The 503 is the probe doing its job,
        not a server error: the request metrics do not count it as one."""
        revisions: SchemaRevisions = state.schema_revisions  # read once, at start-up
        try:
            async with state.database.engine.connect() as connection:
                recorded = await _recorded_revisions(connection)
        except Exception as exc:
            # the probe is public: why the database failed goes to the log, not to the caller
            logger.warning("database_unavailable", error=type(exc).__name__, detail=str(exc))
            answer_5xx_on_purpose(request)
            return _answer(ready=False, database="unavailable")
        schema = schema_status(recorded, revisions)
        if schema not in READY_SCHEMAS:
            logger.warning(
                "schema_not_ready",
                schema=schema,
                expected=sorted(revisions.heads),
                recorded=sorted(recorded),
                hint="apply the migrations: raiz db upgrade",
            )
            answer_5xx_on_purpose(request)
            return _answer(ready=False, database="ok", schema=schema)
        return _answer(ready=True, database="ok", schema=schema)
