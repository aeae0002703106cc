"""Keyset pages of listings in creation order.

A listing ordered by creation time pages by its last row rather than by an offset: the next
page is the rows after that row in the listing's order.  Unlike an offset it neither repeats
nor skips a row when rows are created between two pages, and it starts in the creation-time
index where an offset reads every row it skips.  Creation times tie (rows written in one
transaction share ``now()``), so ties are ordered by id and the bound compares both.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import and_, or_, select

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Select, UnaryExpression
    from sqlalchemy.ext.asyncio import AsyncSession
    from sqlalchemy.orm import InstrumentedAttribute

__all__ = ("CreationOrder",)


@dataclass(frozen=True, slots=True)
class CreationOrder:
    """A listing's order by creation time, ties by id (ascending either way), and the rows
    after one of its rows in that order: one definition, so a page's order and its bound
    cannot drift apart."""

    created_at: InstrumentedAttribute[dt.datetime]
    """The rows' creation time."""
    id: InstrumentedAttribute[uuid.UUID]
    """The rows' id: the tie-break among rows created at the same time."""
    newest_first: bool
    """Latest creation first (a lobby, a history) rather than oldest first."""

    def order_by(self) -> tuple[UnaryExpression[dt.datetime], UnaryExpression[uuid.UUID]]:
        """The ``ORDER BY`` of the listing."""
        created = self.created_at.desc() if self.newest_first else self.created_at.asc()
        return created, self.id.asc()

    def after(self, created_at: dt.datetime, row_id: uuid.UUID) -> ColumnElement[bool]:
        """The rows after the row ``row_id``, created at ``created_at``, in this order.  The
        first conjunct alone bounds an index range on the creation time; the second drops
        the anchor itself and the rows tied with it that came before it."""
        if self.newest_first:
            return and_(
                self.created_at <= created_at,
                or_(self.created_at < created_at, self.id > row_id),
            )
        return and_(
            self.created_at >= created_at,
            or_(self.created_at > created_at, self.id > row_id),
        )

    async def after_row(
        self,
        session: AsyncSession,
        row_id: uuid.UUID,
        missing: Exception,
        anchor: Select[dt.datetime] | None = None,
    ) -> ColumnElement[bool]:
        """:meth:`after` the row ``row_id``, its creation time read by ``anchor`` (by default
        the row's own, by id; a caller may narrow it, e.g. to the caller's own rows); raises
        ``missing`` when it reads none."""
        if anchor is None:
            anchor = select(self.created_at).where(self.id == row_id)
        created_at = await session.scalar(anchor)
        if created_at is None:
            raise missing
        return self.after(created_at, row_id)
