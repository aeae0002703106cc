"""The Litestar application factory."""

from __future__ import annotations

import datetime as dt
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig, SQLAlchemyPlugin
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from litestar import Litestar
from litestar.channels import ChannelsPlugin
from litestar.di import Provide
from litestar.enums import ScopeType
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.plugins.prometheus import PrometheusConfig, PrometheusController

from app.accounts.auth import PUBLIC_OPT_KEY, BearerAuthMiddleware
from app.accounts.controllers import AdminUsersController, AuthController
from app.accounts.service import AccountService
from app.accounts.suspension import SuspensionService
from app.api.health import HealthController
from app.api.limits import EntryLimitsController, UserEntryLimitsController
from app.api.middleware import HttpMetricsMiddleware, RequestContextMiddleware
from app.api.openapi import document_error_responses, openapi_router
from app.api.requests import ApiRequest
from app.api.suspensions import SelfExclusionController, SuspensionController
from app.compliance.checkpoints import CheckpointJob, count_pending_rounds
from app.compliance.controllers import (
    AccessLogController,
    AuditController,
    CheckpointController,
    ComplianceController,
    PlayerHandsController,
)
from app.compliance.monitor import AuditMonitor, count_latest_sweep
from app.compliance.signatures import check_active_key, check_signing_settings
from app.config import Settings, get_settings
from app.db import Database
from app.db.embedded import ensure_database_async, resolve_database_url_sync
from app.db.engine import sync_url
from app.db.migrate import schema_revisions
from app.errors import exception_handlers
from app.logging import configure_logging
from app.metrics import (
    HTTP_LATENCY_BUCKETS_S,
    forget_dead_workers,
    forget_this_worker,
    measure_clock_skew,
    update_pool_gauges,
)
from app.rng_api import (
    RngController,
    RngServices,
    provide_rng_service,
    rng_service_error_handler,
)
from app.tables.controllers import FeeRateController, TableController
from app.tables.listener import ResilientPgListener
from app.tables.metrics import count_tables_by_status
from app.tables.realtime import (
    PRESENCE_REFRESH_S,
    OpenSockets,
    SharedTableReads,
    table_socket,
)
from app.tables.runtime import TableRuntime
from app.tables.suspended import RELEASE_INTERVAL_S as SUSPENDED_SEATS_INTERVAL_S
from app.tables.suspended import SuspendedSeats
from app.tables.timers import PresenceSweeper, table_deadline_handlers
from app.timers import DeadlineRunner, build_scheduler
from app.timers.runner import count_failed_deadlines, count_overdue_deadlines
from app.wallet import (
    AdminAccountsController,
    AdminWalletsController,
    PaymentWebhookController,
    WalletController,
)
from app.wallet.errors import ledger_error_handler
from ledger.errors import LedgerError
from rng.contract import RngServiceError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ("check_settings", "create_app")

API_VERSION = "0.1.0"
POOL_GAUGE_INTERVAL_S = 1.0
TABLE_GAUGE_INTERVAL_S = 5.0
PRESENCE_SWEEP_INTERVAL_S = 2.0
LOGIN_FAILURES_CLEANUP_INTERVAL_S = 600.0


class MetricsController(PrometheusController):
    """``/metrics`` in Prometheus exposition format (public, scraped on loopback)."""

    path = "/metrics"
    opt = {PUBLIC_OPT_KEY: True}
    include_in_schema = False


def check_settings(settings: Settings) -> None:
    """The start-up checks of the keyrings (``ConfigurationError``, no key in the message).

    ``raiz serve`` runs them before it migrates or starts a worker: a worker that cannot
    start is restarted by the server, again and again, and the service never stops.
    """
    RngServices.from_settings(settings)
    check_signing_settings(settings)


def create_app(settings: Settings | None = None, database: Database | None = None) -> Litestar:
    """Build the API.

    ``settings`` defaults to the environment; ``database`` defaults to a pool on
    ``settings.database_url`` (or the embedded server when that is unset).
    """
    settings = settings or get_settings()
    configure_logging(settings.log_level, json=settings.log_json)
    embedded = settings.database_url is None
    url = resolve_database_url_sync(settings)
    db = database or Database.connect(url, settings)
    capacity = settings.db_pool_size + settings.db_max_overflow
    check_settings(settings)
    rng_services = RngServices.from_settings(settings)
    checkpoints = CheckpointJob(db, settings)
    audit = AuditMonitor(db, settings)

    runner = DeadlineRunner(db, {})
    scheduler = AsyncIOScheduler(timezone="UTC")

    def wake_at(when: dt.datetime) -> None:
        # Precision only: the periodic sweep fires every due deadline anyway.
        if scheduler.running:
            scheduler.add_job(runner.run_due, "date", run_date=when, misfire_grace_time=None)

    table_runtime = TableRuntime(settings, rng_services, wake_at)
    for kind, handler in table_deadline_handlers(table_runtime).items():
        runner.register(kind, handler)
    presence = PresenceSweeper(db, table_runtime)
    suspended_seats = SuspendedSeats(db, table_runtime)
    open_sockets = OpenSockets(db)

    async def refresh_gauges() -> None:
        update_pool_gauges(db.engine, capacity)

    async def refresh_table_gauges() -> None:
        forget_dead_workers()
        await count_tables_by_status(db)
        await count_overdue_deadlines(db)
        await count_failed_deadlines(db)
        await count_latest_sweep(db)
        await count_pending_rounds(db)
        await measure_clock_skew(db)

    async def end_self_exclusions() -> None:
        async with db.session() as session:
            await SuspensionService(session).end_self_exclusions()

    async def forget_old_login_failures() -> None:
        async with db.session() as session:
            await AccountService(session, settings).forget_old_login_failures()

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        if embedded:
            await ensure_database_async(url)
        await check_active_key(db, settings)
        forget_dead_workers()
        update_pool_gauges(db.engine, capacity)
        build_scheduler(
            runner,
            settings.scheduler_poll_interval_s,
            periodic=[
                ("pool-gauges", refresh_gauges, POOL_GAUGE_INTERVAL_S),
                ("table-gauges", refresh_table_gauges, TABLE_GAUGE_INTERVAL_S),
                ("presence", presence.sweep, PRESENCE_SWEEP_INTERVAL_S),
                ("suspended-seats", suspended_seats.release, SUSPENDED_SEATS_INTERVAL_S),
                ("self-exclusions", end_self_exclusions, SUSPENDED_SEATS_INTERVAL_S),
                ("socket-presence", open_sockets.refresh_presence, PRESENCE_REFRESH_S),
                ("checkpoint", checkpoints.run, settings.checkpoint_interval_s),
                ("audit", audit.run, settings.audit_interval_s),
                (
                    "login-failures",
                    forget_old_login_failures,
                    LOGIN_FAILURES_CLEANUP_INTERVAL_S,
                ),
            ],
            scheduler=scheduler,
        )
        if settings.run_scheduler:
            scheduler.start()
        try:
            yield
        finally:
            if scheduler.running:
                scheduler.shutdown(wait=False)
            await db.dispose()
            forget_this_worker()

    prometheus = PrometheusConfig(
        app_name="raiz",
        prefix="raiz_http",
        group_path=True,
        buckets=list(HTTP_LATENCY_BUCKETS_S),
        exclude=["/metrics"],
        # Requests only: a table socket never reaches the middleware's status and duration
        # (it was counted as a 200 answered in 0 s, and "in progress" while open).
        scopes={ScopeType.HTTP},
        # load shedding (503 service_busy) is counted apart from server errors
        middleware_class=HttpMetricsMiddleware,
    )
    channels = ChannelsPlugin(
        backend=ResilientPgListener(sync_url(url)),
        arbitrary_channels_allowed=True,
    )
    sqlalchemy = SQLAlchemyPlugin(
        config=SQLAlchemyAsyncConfig(
            engine_instance=db.engine,
            session_maker=db.sessionmaker,
            session_dependency_key="db_session",
            set_default_exception_handler=False,
        )
    )
    app = Litestar(
        route_handlers=[
            HealthController,
            MetricsController,
            AuthController,
            AdminUsersController,
            SuspensionController,
            SelfExclusionController,
            EntryLimitsController,
            UserEntryLimitsController,
            RngController,
            WalletController,
            AdminWalletsController,
            AdminAccountsController,
            PaymentWebhookController,
            TableController,
            FeeRateController,
            table_socket,
            ComplianceController,
            CheckpointController,
            AuditController,
            PlayerHandsController,
            AccessLogController,
        ],
        dependencies={
            "settings": Provide(lambda: settings, sync_to_thread=False),
            "rng_service": Provide(provide_rng_service, sync_to_thread=False),
        },
        plugins=[sqlalchemy, channels],
        middleware=[
            RequestContextMiddleware,
            prometheus.middleware,
            DefineMiddleware(
                BearerAuthMiddleware,
                exclude=["^/schema", "^/metrics"],
                exclude_from_auth_key=PUBLIC_OPT_KEY,
            ),
        ],
        exception_handlers={
            **exception_handlers(),
            RngServiceError: rng_service_error_handler,
            LedgerError: ledger_error_handler,
        },
        request_class=ApiRequest,
        lifespan=[lifespan],
        openapi_config=OpenAPIConfig(
            title="Raiz",
            version=API_VERSION,
            description="Auditable real-money Cacheta, Pife and Truco tables.",
            path="/schema",
            openapi_router=openapi_router("/schema"),
            render_plugins=[SwaggerRenderPlugin()],
            components=Components(
                security_schemes={
                    "bearer": SecurityScheme(type="http", scheme="bearer", bearer_format="opaque")
                }
            ),
            security=[{"bearer": []}],
        ),
        logging_config=None,
        debug=False,
    )
    app.state.settings = settings
    app.state.database = db
    app.state.schema_revisions = schema_revisions()  # for the readiness probe
    app.state.deadline_runner = runner
    app.state.scheduler = scheduler
    app.state.rng_services = rng_services
    app.state.table_runtime = table_runtime
    app.state.open_sockets = open_sockets
    app.state.shared_table_reads = SharedTableReads(db)
    document_error_responses(app)
    return app
