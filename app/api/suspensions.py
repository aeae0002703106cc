"""HTTP routes of account suspensions (operators): they span accounts and tables."""

from __future__ import annotations

import uuid
from typing import Any

from litestar import Controller, Request, get, post
from litestar.params import FromPath, JSONBody
from litestar.status_codes import HTTP_200_OK

from app.accounts.auth import principal_of, requires_role
from app.accounts.schemas import (
    SelfExclusionRequest,
    SuspensionChangeRead,
    SuspensionRead,
    SuspensionRequest,
    UserRead,
)
from app.accounts.suspension import SuspensionChange, SuspensionService
from app.api.deps import DbSession
from app.api.strict import strict_body
from app.compliance.access import audit_compliance_read
from app.tables.suspended import SuspendedSeats

__all__ = ("SelfExclusionController", "SuspensionController")


async def _committed_and_released(
    request: Request[Any, Any, Any], db_session: DbSession, change: SuspensionChange
) -> SuspensionChangeRead:
    """Commit a suspension, then give up the account's seats at open tables (each table in
    its own transaction: ``app.tables.suspended``)."""
    await db_session.commit()
    released = await SuspendedSeats(
        request.app.state.database, request.app.state.table_runtime
    ).release(change.user.id)
    return SuspensionChangeRead(
        user=UserRead.of(change.user),
        change=SuspensionRead.of(change.record),
        revoked_tokens=change.revoked_tokens,
        released_seats=released,
    )


class SuspensionController(Controller):
    """Suspend and reinstate accounts; every change is kept (``app.accounts.suspension``)."""

    path = "/admin/users/{user_id:uuid}"
    tags = ["admin"]

    @post(
        "/suspend",
        operation_id="suspendUser",
        status_code=HTTP_200_OK,
        guards=[requires_role("operator")],
    )
    async def suspend(
        self,
        request: Request[Any, Any, Any],
        user_id: FromPath[uuid.UUID],
        data: JSONBody[SuspensionRequest],
        db_session: DbSession,
    ) -> SuspensionChangeRead:
        """Suspend an account: it cannot log in, its tokens stop working, it cannot sit or open
        a table, and its seats at tables that have not started are given up with their entries
        refunded.  Matches it plays go on without it."""
        change = await SuspensionService(db_session).suspend(
            user_id, data.reason, principal_of(request).user_id
        )
        return await _committed_and_released(request, db_session, change)

    @post(
        "/reinstate",
        operation_id="reinstateUser",
        status_code=HTTP_200_OK,
        guards=[requires_role("operator")],
    )
    async def reinstate(
        self,
        request: Request[Any, Any, Any],
        user_id: FromPath[uuid.UUID],
        data: JSONBody[SuspensionRequest],
        db_session: DbSession,
    ) -> SuspensionChangeRead:
        """Lift a suspension: the account logs in again (nothing it gave up comes back)."""
        change = await SuspensionService(db_session).reinstate(
            user_id, data.reason, principal_of(request).user_id
        )
        await db_session.commit()
        return SuspensionChangeRead(
            user=UserRead.of(change.user), change=SuspensionRead.of(change.record)
        )

    @get(
        "/suspensions",
        operation_id="listUserSuspensions",
        guards=[requires_role("operator", "compliance")],
    )
    async def history(
        self,
        request: Request[Any, Any, Any],
        user_id: FromPath[uuid.UUID],
        db_session: DbSession,
    ) -> list[SuspensionRead]:
        """Every suspension, self-exclusion and reinstatement of the account, oldest first
        (a compliance read is recorded in the access log)."""
        records = await SuspensionService(db_session).history(user_id)
        await audit_compliance_read(
            db_session,
            principal_of(request),
            "read_suspensions",
            str(user_id),
            {"found": len(records)},
        )
        return [SuspensionRead.of(record) for record in records]


class SelfExclusionController(Controller):
    """A player excludes themselves from play (responsible gaming)."""

    path = "/players/me"
    tags = ["accounts"]
    guards = [requires_role("player")]

    @post("/self-exclusion", operation_id="excludeMyself", status_code=HTTP_200_OK)
    async def exclude(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[SelfExclusionRequest],
        db_session: DbSession,
    ) -> SuspensionChangeRead:
        """Exclude yourself from play for ``days`` days: this token and every other stop
        working, logins are refused until then, and your seats at tables that have not started
        are given up with their entries refunded.  Nobody can lift it sooner; it ends by
        itself.  Your wallet stays yours: ask support to pay its balance out."""
        data = await strict_body(request, SelfExclusionRequest)  # "7" is not a number of days
        user_id = principal_of(request).user_id
        change = await SuspensionService(db_session).self_exclude(user_id, data.days)
        return await _committed_and_released(request, db_session, change)
