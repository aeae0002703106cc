"""Everything a table operation needs for one transaction."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings
    from ledger.service import Ledger
    from rng.service import RngService

__all__ = ("TableContext",)


def _no_wake(_: dt.datetime) -> None:
    return None


@dataclass(slots=True)
class TableContext:
    """A session plus the services a table talks to (all sharing the session's transaction)."""

    session: AsyncSession
    settings: Settings
    rng: RngService
    ledger: Ledger
    wake_at: Callable[[dt.datetime], None] = field(default=_no_wake)
    """Asks this worker's scheduler to sweep deadlines at that moment (precision only:
    the periodic sweep fires every deadline anyway)."""
