"""The table WebSocket: each seated player gets their own view, spectators the public one.

Every change of a table ends with ``pg_notify`` inside its transaction, so a notification
is delivered (to every worker's listener) only once the change is committed.  A socket
re-reads the table and sends the viewer's view: nothing hidden ever travels through
NOTIFY, and bursts coalesce (only the newest state is sent).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import anyio
from litestar import WebSocket, websocket
from litestar.channels import ChannelsPlugin
from litestar.di import NamedDependency
from litestar.exceptions import WebSocketDisconnect
from litestar.params import FromPath

from app.accounts.auth import principal_of
from app.db import Database
from app.tables.driver import notify_channel
from app.tables.models import Seat, Table
from app.tables.runtime import TableRuntime
from app.tables.service import TableService
from app.tables.views import table_view

__all__ = ("PRESENCE_REFRESH_S", "table_socket")

PRESENCE_REFRESH_S = 5.0
"""An open socket refreshes its player's presence this often."""
NOT_FOUND_CLOSE_CODE = 4404


@websocket("/tables/{table_id:uuid}/ws", name="tableSocket")
async def table_socket(
    socket: WebSocket[Any, Any, Any],
    table_id: FromPath[uuid.UUID],
    channels: NamedDependency[ChannelsPlugin],
) -> None:
    """Push the caller's view of the table on connect and after every change.

    The client may send ``{"type": "ping"}`` (answered with ``{"type": "pong"}``); the
    token comes in the ``token`` query parameter (browsers cannot set headers here).
    """
    principal = principal_of(socket)
    database: Database = socket.app.state.database
    runtime: TableRuntime = socket.app.state.table_runtime

    async def refresh(*, send_view: bool, touch: bool) -> bool:
        """Re-read the table: record a seated player's presence (``touch``), send the
        viewer's view (``send_view``). False when the table does not exist."""
        async with database.session() as session:
            table = await session.get(Table, table_id)
            if table is None:
                return False
            if touch and table.status in ("open", "running"):
                seated = await session.scalar(
                    Seat.__table__.select()
                    .with_only_columns(Seat.id)
                    .where(
                        Seat.table_id == table_id,
                        Seat.user_id == principal.user_id,
                        Seat.left_at.is_(None),
                    )
                )
                if seated is not None:
                    await TableService(runtime.context(session)).touch(table_id, principal.user_id)
                    await session.commit()
            if send_view:
                view = await table_view(session, table, principal.user_id)
                await socket.send_json({"type": "view", "view": view})
        return True

    await socket.accept()
    async with channels.start_subscription([notify_channel(table_id)]) as subscriber:
        if not await refresh(send_view=True, touch=True):
            await socket.close(code=NOT_FOUND_CLOSE_CODE, reason="table_not_found")
            return

        async def receive() -> None:
            while True:
                message = await socket.receive_json()
                if isinstance(message, dict) and message.get("type") == "ping":
                    await refresh(send_view=False, touch=True)
                    await socket.send_json({"type": "pong"})

        async def keep_present() -> None:
            while True:
                await anyio.sleep(PRESENCE_REFRESH_S)
                await refresh(send_view=False, touch=True)

        changed = asyncio.Event()

        async def listen() -> None:
            async for _ in subscriber.iter_events():
                changed.set()

        async def push() -> None:
            # A burst of changes coalesces into one view of the newest state. Presence is
            # not written here (keep_present does it): a view is a read, not a sign of life.
            while True:
                await changed.wait()
                changed.clear()
                await refresh(send_view=True, touch=False)

        with contextlib.suppress(WebSocketDisconnect):
            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(listen)
                    group.start_soon(push)
                    group.start_soon(keep_present)
                    await receive()
            except BaseExceptionGroup as group_error:
                # The client went away: the task group wraps its disconnect.
                _, others = group_error.split(WebSocketDisconnect)
                if others is not None:
                    raise others from None
