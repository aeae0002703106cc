"""HTTP routes of tables and fee rates (thin: parse, call the service, commit, render)."""

from __future__ import annotations

import time
import uuid
from typing import Annotated, Any

from litestar import Controller, Request, get, post
from litestar.params import FromPath, JSONBody, Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

from app.accounts.auth import principal_of, requires_role
from app.api.deps import DbSession
from app.api.strict import strict_body
from app.tables import metrics
from app.tables.fees import current_fee_rate, fee_rate_history, set_fee_rate
from app.tables.runtime import TableRuntime
from app.tables.schemas import (
    ActionRequest,
    CancelRequest,
    ClientSeedRequest,
    FeeRateChange,
    TableCreate,
)
from app.tables.service import TableService
from app.tables.views import table_summary, table_view

__all__ = ("FeeRateController", "TableController")

AnyRequest = Request[Any, Any, Any]


def _service(request: AnyRequest, session: DbSession) -> TableService:
    runtime: TableRuntime = request.app.state.table_runtime
    return TableService(runtime.context(session))


class TableController(Controller):
    """Entry tables: create, list, seat, leave, start, cancel, play, watch."""

    path = "/tables"
    tags = ["tables"]

    @post(
        "/",
        operation_id="createTable",
        status_code=HTTP_201_CREATED,
        guards=[requires_role("player", "operator")],
    )
    async def create(
        self, request: AnyRequest, data: JSONBody[TableCreate], db_session: DbSession
    ) -> dict[str, Any]:
        """Open a table; the current fee rate is snapshotted into it."""
        data = await strict_body(request, TableCreate)
        table = await _service(request, db_session).create(
            principal_of(request),
            preset=data.preset,
            seat_count=data.seat_count,
            entry_cents=data.entry_cents,
            fill_deadline_s=data.fill_deadline_s,
            options=data.options,
        )
        await db_session.commit()
        return table_summary(table, 0)

    @get("/", operation_id="listTables")
    async def list_tables(
        self,
        *,
        request: AnyRequest,
        db_session: DbSession,
        status: Annotated[
            str | None,
            # (?!\n): Python's $ also matches before a final newline ("open\n" listed nothing)
            Parameter(pattern=r"^(open|running|finished|cancelled)(?!\n)$"),
        ] = None,
        limit: Annotated[int, Parameter(ge=1, le=200)] = 50,
        offset: Annotated[int, Parameter(ge=0, le=1_000_000)] = 0,
        before: Annotated[
            uuid.UUID | None,
            Parameter(
                description=(
                    "The last table of the previous page: this page starts after it (keyset "
                    "pagination; stable while tables are created, unlike offset, which is "
                    "applied after it)."
                )
            ),
        ] = None,
    ) -> list[dict[str, Any]]:
        """Tables with entry, pool so far and net prize at each table's fee snapshot, newest
        first; ``before`` (a table id, the last one of the previous page) pages on."""
        rows = await _service(request, db_session).list_tables(
            status=status, limit=limit, offset=offset, before=before
        )
        return [table_summary(table, seated) for table, seated in rows]

    @get("/{table_id:uuid}", operation_id="getTable")
    async def get_table(
        self, request: AnyRequest, table_id: FromPath[uuid.UUID], db_session: DbSession
    ) -> dict[str, Any]:
        """The caller's view: own hand if seated, public information otherwise."""
        table = await _service(request, db_session).get(table_id)
        return await table_view(db_session, table, principal_of(request).user_id)

    @post(
        "/{table_id:uuid}/seat",
        operation_id="takeSeat",
        status_code=HTTP_201_CREATED,
        guards=[requires_role("player")],
    )
    async def seat(
        self, request: AnyRequest, table_id: FromPath[uuid.UUID], db_session: DbSession
    ) -> dict[str, Any]:
        """Sit and pay the entry (one transaction); starts the match when the table fills."""
        service = _service(request, db_session)
        await service.seat(principal_of(request), table_id)
        await db_session.commit()
        return await table_view(
            db_session, await service.get(table_id), principal_of(request).user_id
        )

    @post(
        "/{table_id:uuid}/leave",
        operation_id="leaveTable",
        status_code=HTTP_200_OK,
        guards=[requires_role("player")],
    )
    async def leave(
        self, request: AnyRequest, table_id: FromPath[uuid.UUID], db_session: DbSession
    ) -> dict[str, Any]:
        """Leave before the start; the entry is refunded in full."""
        service = _service(request, db_session)
        await service.leave(principal_of(request), table_id)
        await db_session.commit()
        return await table_view(
            db_session, await service.get(table_id), principal_of(request).user_id
        )

    @post("/{table_id:uuid}/start", operation_id="startTable", status_code=HTTP_200_OK)
    async def start(
        self, request: AnyRequest, table_id: FromPath[uuid.UUID], db_session: DbSession
    ) -> dict[str, Any]:
        """The creator starts the match with at least two players seated."""
        service = _service(request, db_session)
        table = await service.start(principal_of(request), table_id)
        await db_session.commit()
        return await table_view(db_session, table, principal_of(request).user_id)

    @post("/{table_id:uuid}/cancel", operation_id="cancelTable", status_code=HTTP_200_OK)
    async def cancel(
        self,
        request: AnyRequest,
        table_id: FromPath[uuid.UUID],
        db_session: DbSession,
        data: JSONBody[CancelRequest | None] = None,
    ) -> dict[str, Any]:
        """The creator or an operator cancels an open table; every entry is refunded."""
        service = _service(request, db_session)
        reason = data.reason if data is not None else "cancelled"
        table = await service.cancel(principal_of(request), table_id, reason)
        await db_session.commit()
        return await table_view(db_session, table, principal_of(request).user_id)

    @post(
        "/{table_id:uuid}/actions",
        operation_id="act",
        status_code=HTTP_200_OK,
        guards=[requires_role("player")],
    )
    async def act(
        self,
        request: AnyRequest,
        table_id: FromPath[uuid.UUID],
        data: JSONBody[ActionRequest],
        db_session: DbSession,
    ) -> dict[str, Any]:
        """Play a move; answered with the caller's new view. Retries are idempotent."""
        started = time.perf_counter()
        principal = principal_of(request)
        table, replayed = await _service(request, db_session).act(
            principal, table_id, data.action_id, data.action
        )
        await db_session.commit()
        metrics.ACTION_LATENCY.labels(str(data.action.get("type"))).observe(
            time.perf_counter() - started
        )
        view = await table_view(db_session, table, principal.user_id)
        view["replayed"] = replayed
        return view

    @post(
        "/{table_id:uuid}/client-seed",
        operation_id="addClientSeed",
        status_code=HTTP_204_NO_CONTENT,
        guards=[requires_role("player")],
    )
    async def client_seed(
        self,
        request: AnyRequest,
        table_id: FromPath[uuid.UUID],
        data: JSONBody[ClientSeedRequest],
        db_session: DbSession,
    ) -> None:
        """Add your own seed to the next deal: once per round, before it is dealt, while you
        are still in the match (``already_contributed``, ``client_seeds_closed``,
        ``seat_eliminated``)."""
        await _service(request, db_session).add_client_seed(
            principal_of(request), table_id, bytes.fromhex(data.client_seed_hex)
        )
        await db_session.commit()

    @post(
        "/{table_id:uuid}/heartbeat",
        operation_id="heartbeat",
        status_code=HTTP_204_NO_CONTENT,
        guards=[requires_role("player")],
    )
    async def heartbeat(
        self, request: AnyRequest, table_id: FromPath[uuid.UUID], db_session: DbSession
    ) -> None:
        """Keep counting as connected without a WebSocket (seated players only)."""
        await _service(request, db_session).heartbeat(principal_of(request), table_id)
        await db_session.commit()


class FeeRateController(Controller):
    """The platform fee rate (basis points of the pool)."""

    path = "/"
    tags = ["fees"]

    @get("/fee-rate", operation_id="currentFeeRate")
    async def current(self, db_session: DbSession) -> dict[str, Any]:
        """The rate new tables will snapshot."""
        rate = await current_fee_rate(db_session)
        return {"fee_bps": rate.fee_bps, "set_at": rate.set_at.isoformat()}

    @get("/admin/fee-rates", operation_id="feeRateHistory", guards=[requires_role("operator")])
    async def history(
        self, db_session: DbSession, limit: Annotated[int, Parameter(ge=1, le=500)] = 100
    ) -> list[dict[str, Any]]:
        """Every change, newest first."""
        return [
            {
                "id": rate.id,
                "fee_bps": rate.fee_bps,
                "reason": rate.reason,
                "set_by": str(rate.set_by) if rate.set_by else None,
                "set_at": rate.set_at.isoformat(),
            }
            for rate in await fee_rate_history(db_session, limit=limit)
        ]

    @post(
        "/admin/fee-rates",
        operation_id="setFeeRate",
        status_code=HTTP_201_CREATED,
        guards=[requires_role("operator")],
    )
    async def change(
        self, request: AnyRequest, data: JSONBody[FeeRateChange], db_session: DbSession
    ) -> dict[str, Any]:
        """Set the rate for tables created from now on (existing tables keep theirs)."""
        data = await strict_body(request, FeeRateChange)
        rate = await set_fee_rate(
            db_session, data.fee_bps, principal_of(request).user_id, data.reason
        )
        await db_session.commit()
        return {"id": rate.id, "fee_bps": rate.fee_bps, "set_at": rate.set_at.isoformat()}
