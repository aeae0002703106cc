"""HTTP routes of entry limits: a player sets their own (responsible gaming), staff read
them with their history (``app.accounts.limits``)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from litestar import Controller, Request, get, put
from litestar.params import FromPath, JSONBody
from litestar.status_codes import HTTP_200_OK

from app.accounts.auth import principal_of, requires_role
from app.accounts.limits import EntryLimits, require_period
from app.accounts.schemas import (
    EntryLimitChangeRead,
    EntryLimitRead,
    EntryLimitRequest,
    EntryLimitsRead,
)
from app.api.deps import DbSession
from app.api.strict import strict_body
from app.compliance.access import audit_compliance_read

__all__ = ("EntryLimitsController", "UserEntryLimitsController")


class EntryLimitsController(Controller):
    """A player's own entry limits per day, week and month."""

    path = "/players/me/limits"
    tags = ["accounts"]
    guards = [requires_role("player")]

    @get(operation_id="listMyEntryLimits")
    async def mine(self, request: Request[Any, Any, Any], db_session: DbSession) -> EntryLimitsRead:
        """Each period's limit in force, a loosening waiting for its cooling-off, what you paid
        in entries within the window (refunds aside) and what remains."""
        user_id = principal_of(request).user_id
        limits = await EntryLimits(db_session).view(user_id)  # at the database's now()
        return EntryLimitsRead(user_id=user_id, limits=[EntryLimitRead.of(s) for s in limits])

    @put("/{period:str}", operation_id="setMyEntryLimit", status_code=HTTP_200_OK)
    async def change(
        self,
        request: Request[Any, Any, Any],
        period: FromPath[str],
        data: JSONBody[EntryLimitRequest],
        db_session: DbSession,
    ) -> EntryLimitRead:
        """Cap what you pay in entries over a rolling ``day`` (24 h), ``week`` (7 days) or
        ``month`` (30 days); ``{"cents": null}`` removes the cap.  A lower cap applies at once; a
        higher one, or none, only after the cooling-off (24 h by default), the current cap
        staying in force until then.  A new request replaces a pending one."""
        require_period(period)
        data = await strict_body(request, EntryLimitRequest)  # "500" is not an amount
        cooling_off = dt.timedelta(seconds=request.app.state.settings.limit_cooling_off_s)
        state = await EntryLimits(db_session).change(
            principal_of(request).user_id, period, data.cents, cooling_off
        )
        await db_session.commit()
        return EntryLimitRead.of(state)


class UserEntryLimitsController(Controller):
    """Staff read a player's entry limits and every change of them."""

    path = "/admin/users/{user_id:uuid}/limits"
    tags = ["admin"]

    @get(operation_id="listUserEntryLimits", guards=[requires_role("operator", "compliance")])
    async def limits(
        self,
        request: Request[Any, Any, Any],
        user_id: FromPath[uuid.UUID],
        db_session: DbSession,
    ) -> EntryLimitsRead:
        """The player's limits as they see them, and every change they asked for, oldest first
        (a compliance read is recorded in the access log)."""
        service = EntryLimits(db_session)
        changes = await service.history(user_id)
        limits = await service.view(user_id)
        await audit_compliance_read(
            db_session,
            principal_of(request),
            "read_entry_limits",
            str(user_id),
            {"changes": len(changes)},
        )
        return EntryLimitsRead(
            user_id=user_id,
            limits=[EntryLimitRead.of(state) for state in limits],
            changes=[EntryLimitChangeRead.of(change) for change in changes],
        )
