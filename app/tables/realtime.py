"""The table WebSocket: each seated player gets their own view, spectators the public one.

Every change of a table ends with ``pg_notify`` inside its transaction, so a notification
is delivered (to every worker's listener) only once the change is committed.  A socket
re-reads the table and sends the viewer's view: nothing hidden ever travels through
NOTIFY, and bursts coalesce (only the newest state is sent).

The sockets of one worker that wake up for the same change share one read of the table
(:class:`SharedTableReads`); each renders its own viewer's view from it.

A seated player counts as present while their socket is open: on connect, on a ping (at
most once per ``PING_CHECK_INTERVAL_S``: every ping gets its pong, a flood costs no more), and
every ``PRESENCE_REFRESH_S`` through :class:`OpenSockets`, which refreshes all the
sockets of a worker in one statement.

The socket's token is checked again before every view it is sent and on a ping (as often as
a ping refreshes presence): once the token is revoked (logout, ``revoke-tokens``) or expired,
the socket is closed with ``UNAUTHORIZED_CLOSE_CODE`` instead of receiving another view.  The
shared read checks the tokens of every socket of the table open in the worker when it starts,
in one query; a socket opened during a read checks its own.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec
from litestar import WebSocket, websocket
from litestar.channels import ChannelsPlugin
from litestar.di import NamedDependency
from litestar.exceptions import WebSocketDisconnect
from litestar.params import FromPath
from sqlalchemy import func, select, tuple_
from sqlalchemy.dialects.postgresql import insert

from app import config
from app.accounts.auth import principal_of
from app.accounts.service import AccountService, live_token_digests, token_digest
from app.db import Database
from app.tables.driver import notify_channel
from app.tables.models import Presence, Seat, Table
from app.tables.runtime import TableRuntime
from app.tables.service import TableService
from app.tables.views import TableSnapshot, read_table, render_view, table_view

__all__ = (
    "PING_CHECK_INTERVAL_S",
    "PRESENCE_REFRESH_S",
    "OpenSockets",
    "SharedRead",
    "SharedTableReads",
    "table_socket",
)

PRESENCE_REFRESH_S = config.PRESENCE_REFRESH_S
PING_CHECK_INTERVAL_S = 1.0
"""A socket's pings check its token and refresh its player's presence at most this often (each
check is a database round trip; a flood of pings is answered without one each)."""
"""An open socket refreshes its player's presence this often (production settings refuse a
presence grace shorter than two refreshes)."""
NOT_FOUND_CLOSE_CODE = 4404
UNAUTHORIZED_CLOSE_CODE = 4401


class OpenSockets:
    """The (table, user) pairs with a table socket open in this worker process.

    ``refresh_presence`` (a scheduler job every ``PRESENCE_REFRESH_S``) marks all of them
    present in one statement, instead of one transaction per socket.
    """

    def __init__(self, database: Database) -> None:
        self._database = database
        self._open: collections.Counter[tuple[uuid.UUID, uuid.UUID]] = collections.Counter()

    @contextlib.contextmanager
    def opened(self, table_id: uuid.UUID, user_id: uuid.UUID) -> Iterator[None]:
        """Count a socket of ``user_id`` on ``table_id`` as open for the block."""
        key = (table_id, user_id)
        self._open[key] += 1
        try:
            yield
        finally:
            self._open[key] -= 1
            if self._open[key] <= 0:
                del self._open[key]

    async def refresh_presence(self) -> None:
        """Mark present now every seated player of an open or running table whose socket is
        open here (others, e.g. spectators, are skipped)."""
        pairs = sorted(self._open)
        if not pairs:
            return
        # the database's now(), as the presence sweep compares it (not this worker's clock)
        seated = (
            select(Seat.table_id, Seat.user_id, func.now())
            .join(Table, Table.id == Seat.table_id)
            .where(
                tuple_(Seat.table_id, Seat.user_id).in_(pairs),
                Seat.left_at.is_(None),
                Table.status.in_(("open", "running")),
            )
            .order_by(Seat.table_id, Seat.user_id)  # one lock order for every worker
        )
        statement = insert(Presence).from_select(["table_id", "user_id", "last_seen_at"], seated)
        async with self._database.session() as session:
            await session.execute(
                statement.on_conflict_do_update(
                    index_elements=[Presence.table_id, Presence.user_id],
                    set_={"last_seen_at": statement.excluded.last_seen_at},
                )
            )
            await session.commit()


@dataclass(frozen=True, slots=True)
class SharedRead:
    """One read of a table shared by the sockets of a worker."""

    snapshot: TableSnapshot | None
    """The table (``None`` when it does not exist)."""
    checked: frozenset[bytes]
    """The token digests of the table's sockets (:meth:`SharedTableReads.watching`) when the
    read started: each was checked in the read's transaction."""
    live: frozenset[bytes]
    """Those of ``checked`` still live (unrevoked, unexpired, account not suspended)."""


class SharedTableReads:
    """One read of a table for all the sockets of this worker that need it at once.

    A socket woken by a notification at time ``t`` joins a read started at or after ``t``
    (so it sees the committed change: NOTIFY is delivered only after the commit), or starts
    one. A read is forgotten when it completes.  It also checks, in one query, the tokens of
    every socket watching the table (:meth:`watching`) at its start.
    """

    def __init__(self, database: Database) -> None:
        self._database = database
        self._reads: dict[uuid.UUID, tuple[float, asyncio.Task[SharedRead]]] = {}
        self._tokens: dict[uuid.UUID, collections.Counter[bytes]] = {}

    @contextlib.contextmanager
    def watching(self, table_id: uuid.UUID, digest: bytes) -> Iterator[None]:
        """Check the token ``digest`` in every read of ``table_id`` started during the block."""
        tokens = self._tokens.setdefault(table_id, collections.Counter())
        tokens[digest] += 1
        try:
            yield
        finally:
            tokens[digest] -= 1
            if tokens[digest] <= 0:
                del tokens[digest]
                if not tokens:
                    del self._tokens[table_id]

    async def read(self, table_id: uuid.UUID, not_before: float) -> SharedRead:
        """The table as read at or after ``not_before`` (``time.monotonic()``)."""
        read = self._reads.get(table_id)
        if read is None or read[0] < not_before:
            digests = frozenset(self._tokens.get(table_id, ()))
            read = (time.monotonic(), asyncio.ensure_future(self._read(table_id, digests)))
            self._reads[table_id] = read
            read[1].add_done_callback(functools.partial(self._forget, table_id, read))
        # shielded: a socket that goes away must not cancel the others' read
        return await asyncio.shield(read[1])

    def _forget(
        self,
        table_id: uuid.UUID,
        read: tuple[float, asyncio.Task[SharedRead]],
        task: asyncio.Task[SharedRead],
    ) -> None:
        if self._reads.get(table_id) is read:
            del self._reads[table_id]
        if not task.cancelled():
            # every socket awaiting the read gets its error; none may be left to await it
            task.exception()

    async def _read(self, table_id: uuid.UUID, digests: frozenset[bytes]) -> SharedRead:
        async with self._database.session() as session:
            table = await session.get(Table, table_id)
            if table is None:
                return SharedRead(None, frozenset(), frozenset())
            snapshot = await read_table(session, table)
            return SharedRead(snapshot, digests, await live_token_digests(session, digests))


def _is_ping(message: str) -> bool:
    """Whether a client's message is ``{"type": "ping"}``; any other message, JSON or not,
    is ignored (a malformed one must not end the socket with a server error)."""
    try:
        decoded = msgspec.json.decode(message)
    except (msgspec.DecodeError, RecursionError):
        return False
    return isinstance(decoded, dict) and decoded.get("type") == "ping"


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
    token = str(socket.auth)
    digest = token_digest(token)
    database: Database = socket.app.state.database
    runtime: TableRuntime = socket.app.state.table_runtime
    open_sockets: OpenSockets = socket.app.state.open_sockets
    shared_reads: SharedTableReads = socket.app.state.shared_table_reads

    async def require_token() -> None:
        """Close the socket unless its token is still valid (not revoked, not expired)."""
        async with database.session() as session:
            valid = await AccountService(session, socket.app.state.settings).authenticate(token)
        if valid is None:
            await close_unauthorized()

    async def close_unauthorized() -> None:
        await socket.close(code=UNAUTHORIZED_CLOSE_CODE, reason="not_authenticated")
        raise WebSocketDisconnect(detail="token revoked or expired")

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
            checked_at = -PING_CHECK_INTERVAL_S
            while True:
                if _is_ping(await socket.receive_text()):
                    if time.monotonic() - checked_at >= PING_CHECK_INTERVAL_S:
                        checked_at = time.monotonic()
                        await require_token()
                        await refresh(send_view=False, touch=True)
                    await socket.send_json({"type": "pong"})

        changed = asyncio.Event()
        notified_at = 0.0

        async def listen() -> None:
            nonlocal notified_at
            async for _ in subscriber.iter_events():
                notified_at = time.monotonic()
                changed.set()

        async def push() -> None:
            # A burst of changes coalesces into one view of the newest state. Presence is
            # not written here (``OpenSockets`` does): a view is a read, not a sign of life.
            while True:
                await changed.wait()
                changed.clear()
                read = await shared_reads.read(table_id, notified_at)
                if read.snapshot is not None:
                    if digest not in read.checked:
                        await require_token()  # opened after the read started
                    elif digest not in read.live:
                        await close_unauthorized()
                    view = render_view(read.snapshot, principal.user_id)
                    await socket.send_json({"type": "view", "view": view})

        with (
            contextlib.suppress(WebSocketDisconnect),
            open_sockets.opened(table_id, principal.user_id),
            shared_reads.watching(table_id, digest),
        ):
            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(listen)
                    group.start_soon(push)
                    await receive()
            except BaseExceptionGroup as group_error:
                # The client went away: the task group wraps its disconnect.
                _, others = group_error.split(WebSocketDisconnect)
                if others is not None:
                    raise others from None
