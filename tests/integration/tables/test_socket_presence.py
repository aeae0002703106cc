"""Open table sockets keep their seated players present: one statement per worker refreshes
every (table, user) pair with a socket open, and nobody else."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from app.db import Database
from app.tables.realtime import OpenSockets
from tests.integration.tables.scenario import sql, start_game

pytestmark = pytest.mark.asyncio


async def test_open_sockets_refresh_the_presence_of_their_seated_players_only(client, settings):
    game = await start_game(client, settings, players=4)
    table_id = uuid.UUID(game.id)
    await sql(
        settings,
        "UPDATE game.presence SET last_seen_at = now() - interval '1 hour' WHERE table_id = :t",
        t=table_id,
    )
    assert settings.database_url is not None
    database = Database.connect(settings.database_url, settings)
    sockets = OpenSockets(database)
    stranger = uuid.uuid4()  # a spectator: not seated, gets no presence row
    try:
        with (
            sockets.opened(table_id, uuid.UUID(game.user(0))),
            sockets.opened(table_id, uuid.UUID(game.user(1))),
            sockets.opened(table_id, uuid.UUID(game.user(1))),  # two sockets, one player
            sockets.opened(table_id, stranger),
        ):
            before = dt.datetime.now(dt.UTC)
            await sockets.refresh_presence()
        await sockets.refresh_presence()  # every socket closed: nothing to do
    finally:
        await database.dispose()
    rows = await sql(
        settings,
        "SELECT user_id, last_seen_at FROM game.presence WHERE table_id = :t",
        t=table_id,
    )
    seen = {str(user_id): last_seen_at for user_id, last_seen_at in rows}
    assert str(stranger) not in seen
    assert len(seen) == 4
    for seat in range(4):
        fresh = seen[game.user(seat)] >= before - dt.timedelta(seconds=1)
        assert fresh == (seat in (0, 1)), (seat, seen[game.user(seat)], before)


async def test_a_closed_socket_no_longer_keeps_its_player_present(client, settings):
    """Once every socket of a player is closed, the refresh leaves them out: a player whose
    sockets are gone must be able to go quiet (and their table freeze)."""
    game = await start_game(client, settings, players=2)
    table_id, user = uuid.UUID(game.id), uuid.UUID(game.user(0))
    assert settings.database_url is not None
    database = Database.connect(settings.database_url, settings)
    sockets = OpenSockets(database)
    try:
        with sockets.opened(table_id, user):
            with sockets.opened(table_id, user):
                pass  # one of its two sockets closed: still open
            await sockets.refresh_presence()
        await sql(
            settings,
            "UPDATE game.presence SET last_seen_at = now() - interval '1 hour' WHERE table_id = :t",
            t=table_id,
        )
        await sockets.refresh_presence()
    finally:
        await database.dispose()
    rows = await sql(
        settings,
        "SELECT count(*) FROM game.presence WHERE table_id = :t"
        " AND last_seen_at > now() - interval '30 minutes'",
        t=table_id,
    )
    assert rows[0][0] == 0


async def test_a_spectator_socket_and_its_pings_record_no_presence(client, settings):
    game = await start_game(client, settings, players=2)
    session = await client.websocket_connect(f"/tables/{game.id}/ws?token={game.spectator}")
    with session as socket:
        assert socket.receive_json(timeout=10)["view"]["you"]["spectator"] is True
        socket.send_json({"type": "ping"})
        assert socket.receive_json(timeout=10) == {"type": "pong"}
    rows = await sql(
        settings, "SELECT count(*) FROM game.presence WHERE table_id = :t", t=uuid.UUID(game.id)
    )
    assert rows[0][0] == 2  # the two players' (from their seats), nobody else's
