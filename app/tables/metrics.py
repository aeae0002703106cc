"""Prometheus metrics of the table context."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import Counter, Gauge, Histogram
from sqlalchemy import func, select

from app.metrics import HTTP_LATENCY_BUCKETS_S
from app.tables.models import TABLE_STATUSES, Table

if TYPE_CHECKING:
    from app.db import Database

__all__ = (
    "ACTIONS",
    "ACTION_LATENCY",
    "CLAIMS",
    "ENTRY_CENTS",
    "FEE_CENTS",
    "PAYOUT_CENTS",
    "REFUND_CENTS",
    "ROUNDS_FINISHED",
    "TABLES_BY_STATUS",
    "TABLES_FINISHED",
    "TABLES_STARTED",
    "TIMEOUTS",
    "count_tables_by_status",
)

TABLES_BY_STATUS = Gauge(
    "raiz_tables",
    "Tables by status (open, running, finished, cancelled), counted in the database.",
    ["status"],
    multiprocess_mode="livemostrecent",
)
TABLES_STARTED = Counter("raiz_tables_started_total", "Matches started.")
TABLES_FINISHED = Counter("raiz_tables_finished_total", "Matches finished and paid.")
ROUNDS_FINISHED = Counter(
    "raiz_rounds_finished_total",
    "Rounds finished, by result (closed, one_left, all_ran, drawn, match_ended).",
    ["result"],
)
ACTIONS = Counter(
    "raiz_actions_total",
    "Player actions received, by type and outcome (applied, refused, replayed).",
    ["type", "outcome"],
)
ACTION_LATENCY = Histogram(
    "raiz_action_latency_seconds",
    "Time to apply a player action, from request to commit.",
    ["type"],
    buckets=HTTP_LATENCY_BUCKETS_S,
)
TIMEOUTS = Counter(
    "raiz_timeouts_total",
    "Engine timers that fired and acted, by kind (decision, dealer_decision, turn, claim_window).",
    ["kind"],
)
CLAIMS = Counter(
    "raiz_claims_total",
    "Out-of-turn claims resolved, by outcome (closed, burned).",
    ["outcome"],
)
ENTRY_CENTS = Counter("raiz_entry_cents_total", "Entry fees taken on seats, in centavos.")
REFUND_CENTS = Counter("raiz_refund_cents_total", "Entry fees refunded, in centavos.")
PAYOUT_CENTS = Counter("raiz_payout_cents_total", "Prizes paid to winners, in centavos.")
FEE_CENTS = Counter("raiz_fee_cents_total", "Platform fees kept at settlement, in centavos.")


async def count_tables_by_status(database: Database) -> None:
    """Refresh the ``raiz_tables`` gauge from the database."""
    async with database.session() as session:
        rows = dict(
            (await session.execute(select(Table.status, func.count()).group_by(Table.status))).all()
        )
    for status in TABLE_STATUSES:
        TABLES_BY_STATUS.labels(status).set(rows.get(status, 0))
