"""Building table contexts outside a request: for timers, sweeps and WebSockets."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.tables.context import TableContext
from ledger.service import Ledger

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings
    from app.rng_api import RngServices

__all__ = ("TableRuntime",)


@dataclass(slots=True)
class TableRuntime:
    """Process-wide pieces every table transaction needs (built once per worker)."""

    settings: Settings
    rng_services: RngServices
    wake_at: Callable[[dt.datetime], None]

    def context(self, session: AsyncSession) -> TableContext:
        """A context whose services all share ``session``'s transaction."""
        return TableContext(
            session=session,
            settings=self.settings,
            rng=self.rng_services.for_session(session),
            ledger=Ledger(session),
            wake_at=self.wake_at,
        )
