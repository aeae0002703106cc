"""Opening a table: its options, seats, entry and fill deadline checked, the fee rate in force
snapshotted, its escrow account opened and its fill deadline armed; and the limits on what a
player may open (the ledger keeps every escrow account for good)."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, func, or_, select, text

from app.accounts.suspension import require_active
from app.db.base import transaction_clock
from app.errors import ConflictError, RateLimitedError, ValidationFailed
from app.games.errors import GameError
from app.tables.fees import current_fee_rate
from app.tables.hosting import game_for_preset
from app.tables.models import Table

if TYPE_CHECKING:
    from app.accounts.service import Principal
    from app.tables.context import TableContext

__all__ = ("TIMER_OPTIONS", "create_table")

TIMER_OPTIONS = frozenset(
    {"decision_timeout_ms", "turn_timeout_ms", "claim_window_ms", "abandon_after_ms"}
)
"""Options only test deployments may override (``RAIZ_ALLOW_TIMER_OVERRIDES``)."""
TABLE_OPTIONS = frozenset({"lives"})
"""Options any table creator may choose within the preset's bounds."""
MAX_ENTRY_CENTS = 100_000_000
"""R$ 1,000,000.00: no table takes a larger entry (typo guard)."""
MIN_FILL_DEADLINE_S = 10
MAX_FILL_DEADLINE_S = 7 * 24 * 3600
TABLE_CREATION_LOCK_SPACE = 0x72617A74
"""First key of the two-key ``pg_advisory_xact_lock`` serializing one player's table
creations ("razt"; the second key is a hash of the player's id)."""
CREATION_WINDOW = dt.timedelta(hours=1)
"""The window of ``max_tables_created_per_hour``."""


async def create_table(
    context: TableContext,
    creator: Principal,
    *,
    preset: str,
    seat_count: int,
    entry_cents: int,
    fill_deadline_s: int,
    options: Mapping[str, Any],
) -> Table:
    """A new open table, with the fee rate in force snapshotted and its fill deadline."""
    spec = game_for_preset(preset)
    if spec is None:
        raise ValidationFailed(
            f"Tables cannot host preset {preset!r} yet.",
            code="unknown_preset",
            details={"preset": preset, "playable": ["cacheta-raiz"]},
        )
    allowed = TABLE_OPTIONS | (
        TIMER_OPTIONS if context.settings.allow_timer_overrides else frozenset()
    )
    refused = sorted(set(options) - allowed)
    if refused:
        raise ValidationFailed(
            f"Option {refused[0]!r} cannot be chosen for a table.",
            code="option_not_allowed",
            details={"option": refused[0], "allowed": sorted(allowed)},
        )
    try:
        resolved = spec.resolve_options(preset, dict(options))
    except GameError as error:
        raise ValidationFailed(error.message, code=error.code, details=error.details) from None
    if not spec.min_players(resolved) <= seat_count <= spec.max_players(resolved):
        raise ValidationFailed(
            f"{preset} seats {spec.min_players(resolved)} to {spec.max_players(resolved)}.",
            code="invalid_seat_count",
            details={"seat_count": seat_count},
        )
    if not 0 <= entry_cents <= MAX_ENTRY_CENTS:
        raise ValidationFailed(
            f"entry_cents must be between 0 and {MAX_ENTRY_CENTS}.",
            code="invalid_entry",
            details={"entry_cents": entry_cents},
        )
    if not MIN_FILL_DEADLINE_S <= fill_deadline_s <= MAX_FILL_DEADLINE_S:
        raise ValidationFailed(
            f"fill_deadline_s must be between {MIN_FILL_DEADLINE_S} and {MAX_FILL_DEADLINE_S}.",
            code="invalid_fill_deadline",
            details={"fill_deadline_s": fill_deadline_s},
        )
    await require_active(context.session, creator.user_id)
    if creator.role == "player":
        await _require_creation_allowance(context, creator)
    rate = await current_fee_rate(context.session)
    # the database's clock (read once the creation lock is held): the fill deadline is due for
    # every worker's timers and seat checks at the same moment, whatever this worker's clock
    now = await transaction_clock(context.session)
    options_dict = resolved.to_dict()
    table = Table(
        id=uuid.uuid4(),
        game=spec.name,
        preset=preset,
        options=options_dict,
        seat_count=seat_count,
        entry_cents=entry_cents,
        currency="BRL",
        fee_bps=rate.fee_bps,
        fee_rate_id=rate.id,
        creator_id=creator.user_id,
        status="open",
        fill_deadline_at=now + dt.timedelta(seconds=fill_deadline_s),
        abandon_after_s=int(options_dict.get("abandon_after_ms", 600_000)) // 1000,
        created_at=now,
        step=0,
        round_number=0,
        last_events=[],
    )
    context.session.add(table)
    await context.session.flush()
    await context.ledger.ensure_table_escrow(table.id)
    from app.timers import schedule_deadline

    schedule_deadline(context.session, table.id, "fill", "fill", table.fill_deadline_at)
    return table


async def _require_creation_allowance(context: TableContext, creator: Principal) -> None:
    """Refuse a player's new table when they already have ``max_open_tables_per_player``
    tables waiting for players (409 ``too_many_open_tables``) or created
    ``max_tables_created_per_hour`` in the last hour, whatever became of them (429
    ``too_many_tables_created``: creating and cancelling without end would still grow the
    ledger, which keeps every table's escrow account).  The player's creations are
    serialized (a transaction-level advisory lock on their id, held until the new table
    is committed), so concurrent requests cannot all pass the counts."""
    settings = context.settings
    await context.session.execute(
        text("SELECT pg_advisory_xact_lock(:space, hashtext(:user))"),
        {"space": TABLE_CREATION_LOCK_SPACE, "user": str(creator.user_id)},
    )
    now = await transaction_clock(context.session)
    hour_ago = now - CREATION_WINDOW
    # 'open' inline, not a parameter: the partial index on open tables matches it in any plan
    is_open = Table.status == bindparam("open_status", "open", literal_execute=True)
    recent = Table.created_at > hour_ago
    waiting, created, oldest = (
        await context.session.execute(
            select(
                func.count().filter(is_open),
                func.count().filter(recent),
                func.min(Table.created_at).filter(recent),
            ).where(Table.creator_id == creator.user_id, or_(is_open, recent))
        )
    ).one()
    limit = settings.max_open_tables_per_player
    if waiting >= limit:
        raise ConflictError(
            f"You already have {waiting} tables waiting for players (at most {limit}); "
            "start, fill or cancel one first.",
            code="too_many_open_tables",
            details={"open": waiting, "limit": limit},
        )
    limit = settings.max_tables_created_per_hour
    if created >= limit:
        retry_after_s = max(1, math.ceil((oldest + CREATION_WINDOW - now).total_seconds()))
        raise RateLimitedError(
            f"You created {created} tables in the last hour (at most {limit}); try again later.",
            code="too_many_tables_created",
            details={"created": created, "limit": limit, "retry_after_s": retry_after_s},
            headers={"Retry-After": str(retry_after_s)},
        )
