"""A table socket is only as good as its token: once the token is revoked (a stolen device,
a logout), the socket gets no further view of the table (its player's hand included)."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import time
import uuid

import pytest
from litestar.exceptions import WebSocketDisconnect

from app.tables.realtime import UNAUTHORIZED_CLOSE_CODE
from tests.helpers import auth
from tests.integration.tables.helpers import create_table, operator, player
from tests.integration.tables.scenario import SLOW_TIMERS, sql, start_game

pytestmark = pytest.mark.asyncio


async def _revoke(client, game) -> None:
    """The operator revokes seat 0's token."""
    revoked = await client.post(
        f"/admin/users/{game.user(0)}/revoke-tokens", headers=auth(game.operator)
    )
    assert revoked.status_code == 200 and revoked.json() == {"revoked": 1}, revoked.text


async def _closed_at_the_next_change(game, socket) -> None:
    """The next public change (the last non-dealer decision starts the dealer's, which wakes
    every open socket of the table; a single secret decision wakes nobody) closes ``socket``
    as unauthorized, with no view sent first."""
    await game.decide(1, True)
    await game.decide(2, True)
    with pytest.raises(WebSocketDisconnect) as closed:
        message = socket.receive_json(timeout=10)
        pytest.fail(f"a revoked token still received {message['type']}: {message}")
    assert closed.value.code == UNAUTHORIZED_CLOSE_CODE


async def test_a_revoked_token_gets_no_further_view_over_an_open_socket(client, settings):
    game = await start_game(
        client, settings, players=3, dealer=0, options={"lives": 3, **SLOW_TIMERS}
    )
    socket_session = await client.websocket_connect(f"/tables/{game.id}/ws?token={game.token(0)}")
    with socket_session as socket:
        first = socket.receive_json(timeout=10)
        assert first["view"]["you"]["match_seat"] == 0
        assert first["view"]["game_view"]["round"]["hand"]
        await _revoke(client, game)
        refused = await client.get(f"/tables/{game.id}", headers=auth(game.token(0)))
        assert refused.status_code == 401
        await _closed_at_the_next_change(game, socket)


async def test_a_malformed_message_is_ignored_like_any_message_that_is_not_a_ping(client, settings):
    op = await operator(client, settings)
    _, token = await player(client, settings, "pia", 0, op)
    table = await create_table(client, token)
    socket_session = await client.websocket_connect(f"/tables/{table['id']}/ws?token={token}")
    with socket_session as socket:
        assert socket.receive_json(timeout=10)["type"] == "view"
        for message in ("not json", "[" * 100_000 + "]" * 100_000, '{"type": "ping"'):
            socket.send_text(message)
        socket.send_bytes(b"\x00\x01")
        # JSON that is not a ping is not answered either
        for other in ({"type": "pong"}, {"kind": "ping"}, "ping", ["ping"]):
            socket.send_json(other)
        socket.send_json({"type": "ping"})
        assert socket.receive_json(timeout=10) == {"type": "pong"}
        with pytest.raises(queue.Empty):
            message = socket.receive_json(timeout=1)
            pytest.fail(f"a message that is not a ping was answered: {message}")


async def closing_code(client, path: str) -> int:
    """The close code of a socket at ``path`` that must not receive any message (its reason
    is the error code)."""
    with pytest.raises(WebSocketDisconnect) as closed:
        socket_session = await client.websocket_connect(path)
        with socket_session as socket:
            message = socket.receive_json(timeout=10)
            pytest.fail(f"the socket received {message['type']}: {message}")
    assert closed.value.detail == "not_authenticated"
    return closed.value.code


async def test_a_socket_without_a_valid_token_is_closed_as_unauthenticated(client, settings):
    """A client reconnecting with an expired or revoked token must learn that it has to log
    in again (4401, as when the token dies on an open socket), not see a server error."""
    game = await start_game(
        client, settings, players=2, dealer=0, options={"lives": 3, **SLOW_TIMERS}
    )
    path = f"/tables/{game.id}/ws"
    for query in ("", "?token=", "?token=bogus", "?token=%00"):
        assert await closing_code(client, path + query) == UNAUTHORIZED_CLOSE_CODE, query
    await sql(
        settings,
        "UPDATE game.access_tokens SET expires_at = now() - interval '1 second'"
        " WHERE user_id = :user",
        user=uuid.UUID(game.user(0)),
    )
    assert await closing_code(client, f"{path}?token={game.token(0)}") == UNAUTHORIZED_CLOSE_CODE
    revoked = await client.post(
        f"/admin/users/{game.user(1)}/revoke-tokens", headers=auth(game.operator)
    )
    assert revoked.status_code == 200, revoked.text
    assert await closing_code(client, f"{path}?token={game.token(1)}") == UNAUTHORIZED_CLOSE_CODE
    # the spectator's valid token still gets the public view
    socket_session = await client.websocket_connect(f"{path}?token={game.spectator}")
    with socket_session as socket:
        view = socket.receive_json(timeout=10)["view"]
        assert view["you"] == {"match_seat": None, "spectator": True}


async def test_a_flood_of_pings_is_answered_without_a_database_round_trip_each(
    client, settings, monkeypatch
):
    """Each ping used to check the token and write the player's presence: a client sending
    pings in a loop made the worker run two transactions per message. A ping still gets its
    pong at once, but the socket checks the token and refreshes presence at most once per
    ``PING_CHECK_INTERVAL_S`` (the pushes still check the token before every view)."""
    from app.accounts.service import AccountService
    from app.tables.realtime import PING_CHECK_INTERVAL_S

    game = await start_game(
        client, settings, players=2, dealer=0, options={"lives": 3, **SLOW_TIMERS}
    )
    checks = 0
    authenticate = AccountService.authenticate

    async def counted(self, token):
        nonlocal checks
        checks += 1
        return await authenticate(self, token)

    socket_session = await client.websocket_connect(f"/tables/{game.id}/ws?token={game.token(0)}")
    with socket_session as socket:
        assert socket.receive_json(timeout=10)["type"] == "view"
        monkeypatch.setattr(AccountService, "authenticate", counted)
        started = time.monotonic()
        for _ in range(200):
            socket.send_json({"type": "ping"})
        for _ in range(200):
            assert socket.receive_json(timeout=10) == {"type": "pong"}
        elapsed = time.monotonic() - started
    assert 1 <= checks <= elapsed / PING_CHECK_INTERVAL_S + 1, (checks, elapsed)


async def test_a_revoked_token_closes_its_own_socket_and_no_other(client, settings, monkeypatch):
    """The sockets of one table share one read per change, which checks all their tokens in
    one query (no socket checks its own): the revoked token's socket is closed, the
    spectator's still gets the view."""
    from app.accounts.service import AccountService

    game = await start_game(
        client, settings, players=3, dealer=0, options={"lives": 3, **SLOW_TIMERS}
    )
    path = f"/tables/{game.id}/ws"
    revoked_session = await client.websocket_connect(f"{path}?token={game.token(0)}")
    kept_session = await client.websocket_connect(f"{path}?token={game.spectator}")
    with revoked_session as revoked_socket, kept_session as kept_socket:
        step = revoked_socket.receive_json(timeout=10)["view"]["step"]
        assert kept_socket.receive_json(timeout=10)["view"]["step"] == step
        own_checks = 0
        authenticate = AccountService.authenticate

        async def counted(self, token):
            nonlocal own_checks
            own_checks += token in (game.token(0), game.spectator)
            return await authenticate(self, token)

        monkeypatch.setattr(AccountService, "authenticate", counted)
        revoked = await client.post(
            f"/admin/users/{game.user(0)}/revoke-tokens", headers=auth(game.operator)
        )
        assert revoked.status_code == 200, revoked.text
        await game.decide(1, True)
        await game.decide(2, True)  # the last decision: a public change
        with pytest.raises(WebSocketDisconnect) as closed:
            message = revoked_socket.receive_json(timeout=10)
            pytest.fail(f"a revoked token still received {message['type']}: {message}")
        assert closed.value.code == UNAUTHORIZED_CLOSE_CODE
        view = kept_socket.receive_json(timeout=10)["view"]
        assert view["step"] > step and view["you"]["spectator"]
        assert own_checks == 0


async def test_a_socket_whose_token_the_shared_read_did_not_check_checks_its_own(
    client, settings, monkeypatch
):
    """A socket that started watching after the read began (its token is not among the
    read's) checks its token itself before the view: revoked, it is closed all the same;
    live, it is sent the view."""
    from app.tables.realtime import SharedTableReads

    @contextlib.contextmanager
    def unwatched(self, table_id, digest):
        yield

    monkeypatch.setattr(SharedTableReads, "watching", unwatched)
    game = await start_game(
        client, settings, players=3, dealer=0, options={"lives": 3, **SLOW_TIMERS}
    )
    socket_session = await client.websocket_connect(f"/tables/{game.id}/ws?token={game.token(0)}")
    live_session = await client.websocket_connect(f"/tables/{game.id}/ws?token={game.token(1)}")
    with socket_session as socket, live_session as live:
        assert socket.receive_json(timeout=10)["type"] == "view"
        step = live.receive_json(timeout=10)["view"]["step"]
        await _revoke(client, game)
        await _closed_at_the_next_change(game, socket)
        view = live.receive_json(timeout=10)["view"]
        assert view["step"] > step and view["you"]["match_seat"] == 1


async def test_a_shared_read_checks_the_tokens_watching_when_it_starts(client, settings):
    """One query checks the tokens of every socket watching the table when the read starts
    (a revoked or an expired one is not live); a token that starts watching
    during the read is not among those checked."""
    from app.accounts.service import token_digest
    from app.db import Database
    from app.tables.realtime import SharedTableReads

    game = await start_game(
        client, settings, players=4, dealer=0, options={"lives": 3, **SLOW_TIMERS}
    )
    table_id = uuid.UUID(game.id)
    digests = [token_digest(game.token(seat)) for seat in range(4)]
    revoked = await client.post(
        f"/admin/users/{game.user(1)}/revoke-tokens", headers=auth(game.operator)
    )
    assert revoked.status_code == 200, revoked.text
    await sql(
        settings,
        "UPDATE game.access_tokens SET expires_at = now() - interval '1 second'"
        " WHERE user_id = :user",
        user=uuid.UUID(game.user(2)),
    )
    assert settings.database_url is not None
    database = Database.connect(settings.database_url, settings)
    reads = SharedTableReads(database)
    try:
        with reads.watching(table_id, digests[0]), reads.watching(table_id, digests[1]):
            with reads.watching(table_id, digests[2]):
                read = await reads.read(table_id, time.monotonic())
            assert read.snapshot is not None and read.snapshot.table.id == table_id
            assert read.checked == frozenset(digests[:3])
            assert read.live == frozenset(digests[:1])
            started = asyncio.ensure_future(reads.read(table_id, time.monotonic()))
            await asyncio.sleep(0)  # the read starts with the two tokens watching
            with reads.watching(table_id, digests[3]):
                joined = await reads.read(table_id, 0.0)
            assert joined is await started
            assert joined.checked == frozenset(digests[:2])
            assert joined.live == frozenset(digests[:1])
        missing = await reads.read(uuid.uuid4(), time.monotonic())
        assert missing.snapshot is None and not missing.checked
    finally:
        await database.dispose()
