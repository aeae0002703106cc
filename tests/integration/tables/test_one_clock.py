"""One clock, the database's: a worker whose own clock is an hour off fires no table deadline
early or late, arms its timers and fill deadlines at the database's time, judges fill
deadlines and presence by it, and dates everything it records by it (docs/tables.md "One
clock, the database's").  ``worker_clock_off`` shifts the clock of every part of this process:
the app under test and the test's own timers (:func:`clock`) are the skewed worker; the
database's ``now()`` is the right time, as for every worker."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from app.db import Database
from app.db.base import transaction_clock
from app.main import create_app
from app.tables.realtime import OpenSockets
from app.tables.service import lock_table
from tests.conftest import make_settings
from tests.helpers import assert_error, auth, until_waiting_on_locks, worker_clock_off
from tests.integration.tables.helpers import (
    FAST_TIMERS,
    create_table,
    operator,
    play_to_the_end,
    player,
)
from tests.integration.tables.scenario import (
    Game,
    all_gone_quiet,
    clock,
    expire_timer,
    gone_quiet,
    heartbeat,
    make_due,
    seat,
    self_driven,
    sql,
    three_players,
)

pytestmark = pytest.mark.asyncio

HOUR = dt.timedelta(hours=1)
TIMER = dt.timedelta(seconds=60)
"""The players' timers (``SLOW_TIMERS``)."""
GRACE_S = 60
FILL_S = 600
PLAY_S = 120
"""A two-player match of one life is over in seconds."""


@pytest.fixture
def settings(database_url):
    """No scheduler in the app: the test runs the deadlines and the sweeps itself."""
    return self_driven(database_url, GRACE_S)


async def _due_in(game: Game, kind: str) -> list[dt.timedelta]:
    """How long until each pending ``kind`` deadline of the table, by the database's clock."""
    rows = await sql(
        game.settings,
        "SELECT due_at - now() FROM game.deadlines"
        " WHERE table_id = :table AND kind = :kind AND status = 'pending' ORDER BY due_at",
        table=uuid.UUID(game.id),
        kind=kind,
    )
    return [row[0] for row in rows]


async def _the_views_show_the_pending_timer(game: Game) -> bool:
    """Whether the timer the views show is due when the table's pending timer deadline is."""
    rows = await sql(
        game.settings,
        "SELECT t.timer_due_at = d.due_at FROM game.tables t JOIN game.deadlines d"
        " ON d.table_id = t.id AND d.kind = 'game' AND d.status = 'pending' WHERE t.id = :table",
        table=uuid.UUID(game.id),
    )
    return [row[0] for row in rows] == [True]


def _a_fresh_minute(left: dt.timedelta) -> bool:
    return TIMER - dt.timedelta(seconds=15) < left <= TIMER


# --- turn timers -------------------------------------------------------------------------------
async def test_a_worker_whose_clock_runs_ahead_fires_no_timer_early_and_arms_a_full_one(
    client, settings, monkeypatch
):
    # A minute's timer armed by a right worker: by a worker an hour ahead it ran out long ago,
    # by the database's clock (every worker's) it has most of its minute left.  With the
    # workers' clocks the player would lose their turn at once.
    game = await three_players(client, settings)
    [left] = await _due_in(game, "game")
    assert _a_fresh_minute(left)
    async with clock(settings) as timers:
        with monkeypatch.context() as ahead:
            worker_clock_off(ahead, HOUR)
            assert await timers.runner.run_due() == 0
            [still] = await _due_in(game, "game")
            assert _a_fresh_minute(still), still
            # due by the database's clock: it fires, and the timer it arms next runs a whole
            # minute of the database's clock (not an hour and a minute)
            await expire_timer(game)
            assert await timers.runner.run_due() == 1
            [left] = await _due_in(game, "game")
            assert _a_fresh_minute(left), left
            assert await _the_views_show_the_pending_timer(game)


async def test_a_worker_whose_clock_is_behind_fires_a_due_timer_on_time_and_arms_a_full_one(
    client, settings, monkeypatch
):
    # An hour behind, the worker would wait an hour past the deadline; and a timer it armed
    # would run out an hour early (at once) for every other worker.
    game = await three_players(client, settings)
    async with clock(settings) as timers:
        with monkeypatch.context() as behind:
            worker_clock_off(behind, -HOUR)
            await expire_timer(game)
            assert await timers.runner.run_due() == 1
            [left] = await _due_in(game, "game")
            assert _a_fresh_minute(left), left
            assert await _the_views_show_the_pending_timer(game)
        # the right worker finds nothing due either
        assert await timers.runner.run_due() == 0


# --- fill deadlines ----------------------------------------------------------------------------
async def test_a_worker_whose_clock_runs_ahead_seats_players_until_the_fill_deadline(
    client, settings, monkeypatch
):
    op = await operator(client, settings)
    ana = (await player(client, settings, "ana", 1_000, op))[1]
    bia = (await player(client, settings, "bia", 1_000, op))[1]
    table = await create_table(client, op, fill_deadline_s=FILL_S)
    async with clock(settings) as timers:
        with monkeypatch.context() as ahead:
            worker_clock_off(ahead, HOUR)
            # an hour past the deadline by its own clock, ten minutes before by the database's:
            # the table is not cancelled, and takes seats
            assert await timers.runner.run_due() == 0
            await seat(client, ana, table["id"])
            # a table this worker opens fills until ten minutes of the database's clock
            later = await create_table(client, op, fill_deadline_s=FILL_S)
            await seat(client, bia, later["id"])
        rows = await sql(
            settings,
            "SELECT t.fill_deadline_at - now(), d.due_at = t.fill_deadline_at"
            " FROM game.tables t JOIN game.deadlines d ON d.table_id = t.id AND d.kind = 'fill'"
            " WHERE t.id = :table",
            table=uuid.UUID(later["id"]),
        )
        [(left, same)] = rows
        assert dt.timedelta(seconds=FILL_S - 30) < left <= dt.timedelta(seconds=FILL_S)
        assert same
        # once due by the database's clock, a worker an hour behind cancels it
        for statement in (
            "UPDATE game.tables SET fill_deadline_at = now() - interval '1 second' WHERE id = :t",
            "UPDATE game.deadlines SET due_at = now() - interval '1 second' WHERE table_id = :t",
        ):
            await sql(settings, statement, t=uuid.UUID(table["id"]))
        with monkeypatch.context() as behind:
            worker_clock_off(behind, -HOUR)
            assert_error(
                await client.post(f"/tables/{table['id']}/seat", headers=auth(bia)),
                409,
                "fill_deadline_passed",
            )
            assert await timers.runner.run_due() == 1
    status = await sql(settings, "SELECT status FROM game.tables WHERE id = :t", t=table["id"])
    assert status[0][0] == "cancelled"


# --- presence ----------------------------------------------------------------------------------
async def test_a_worker_whose_clock_runs_ahead_freezes_no_table_of_present_players(
    client, settings, monkeypatch
):
    # Every player was seen within the grace by the database's clock; an hour ahead, the
    # worker would find nobody connected and freeze the table (its abandon timer running).
    game = await three_players(client, settings)
    async with clock(settings) as timers:
        with monkeypatch.context() as ahead:
            worker_clock_off(ahead, HOUR)
            assert await timers.sweeper.sweep() == 0
    assert (await game.view(None))["frozen"] is False


async def test_a_worker_whose_clock_is_behind_freezes_a_table_its_players_left(
    client, settings, monkeypatch
):
    # Two players were last seen ten minutes ago, past the minute's grace: an hour behind, the
    # worker would still count them connected and never freeze the table.
    game = await three_players(client, settings)
    for seat_ in (1, 2):
        await sql(
            settings,
            "UPDATE game.presence SET last_seen_at = now() - interval '10 minutes'"
            " WHERE table_id = :table AND user_id = :user",
            table=uuid.UUID(game.id),
            user=uuid.UUID(game.user(seat_)),
        )
    async with clock(settings) as timers:
        with monkeypatch.context() as behind:
            worker_clock_off(behind, -HOUR)
            assert await timers.sweeper.sweep() == 1
    assert (await game.view(None))["frozen"] is True
    [left] = await _due_in(game, "abandon")
    assert dt.timedelta(minutes=9) < left <= dt.timedelta(minutes=10)


async def test_presence_a_skewed_worker_records_is_dated_by_the_database(
    client, settings, monkeypatch
):
    # Heartbeats, sockets and a returning player's abandon check on workers an hour off: the
    # players are present by the database's clock, so the table neither freezes nor is won
    # by abandonment.
    game = await three_players(client, settings)
    async with clock(settings) as timers:
        await gone_quiet(game, 2)
        assert await timers.sweeper.sweep() == 0  # two players are still connected
        await all_gone_quiet(game)
        with monkeypatch.context() as behind:
            worker_clock_off(behind, -HOUR)
            await heartbeat(game, 0)
            assert settings.database_url is not None
            database = Database.connect(settings.database_url, settings)
            try:
                sockets = OpenSockets(database)
                with sockets.opened(uuid.UUID(game.id), uuid.UUID(game.user(1))):
                    await sockets.refresh_presence()
            finally:
                await database.dispose()
        assert await timers.sweeper.sweep() == 0
        assert (await game.view(None))["frozen"] is False

        # seat 1 leaves, the table freezes; seat 1 is back before the abandon deadline, which
        # a worker an hour ahead fires: it must thaw the table, not end the match
        await gone_quiet(game, 1)
        assert await timers.sweeper.sweep() == 1
        await heartbeat(game, 1)
        await make_due(game, "abandon")
        with monkeypatch.context() as ahead:
            worker_clock_off(ahead, HOUR)
            assert await timers.runner.run_due() == 1
    after = await game.view(None)
    assert after["status"] == "running" and after["frozen"] is False


# --- what a skewed worker records --------------------------------------------------------------
async def test_every_time_a_worker_an_hour_ahead_records_is_the_database_s(
    client, database_url, monkeypatch
):
    # A whole match (deals after a delay, a seat given up, a cancelled table, a fee rate) on a
    # worker an hour ahead, its scheduler running: every time it records lies between the
    # database's now() before and after, or a timer's length after it.
    settings = make_settings(
        database_url,
        allow_timer_overrides=True,
        presence_grace_s=3600,
        scheduler_poll_interval_s=0.05,
        deal_delay_s=0.2,
    )
    [(before,)] = await sql(settings, "SELECT now()")
    worker_clock_off(monkeypatch, HOUR)
    async with AsyncTestClient(app=create_app(settings)) as app:
        op = await operator(app, settings)
        rate = await app.post(
            "/admin/fee-rates", json={"fee_bps": 1_000, "reason": "clock"}, headers=auth(op)
        )
        assert rate.status_code == 201, rate.text
        players = [await player(app, settings, f"player{i}", 1_000, op) for i in range(2)]
        tokens = [token for _, token in players]
        cancelled = await create_table(app, op, seat_count=2)
        await seat(app, tokens[0], cancelled["id"])
        left = await app.post(f"/tables/{cancelled['id']}/leave", headers=auth(tokens[0]))
        assert left.status_code in (200, 204), left.text
        await seat(app, tokens[0], cancelled["id"])
        gone = await app.post(f"/tables/{cancelled['id']}/cancel", headers=auth(op))
        assert gone.status_code == 200, gone.text
        table = await create_table(
            app, tokens[0], seat_count=2, options={"lives": 1, **FAST_TIMERS}
        )
        for token in tokens:
            await seat(app, token, table["id"])
        # (bounded: a deal armed an hour late would keep the bots waiting for good)
        await asyncio.wait_for(play_to_the_end(app, table["id"], tokens), PLAY_S)
    [(after,)] = await sql(settings, "SELECT now()")
    slack = dt.timedelta(seconds=1)
    times = {
        "fee_rates.set_at": "SELECT set_at FROM game.fee_rates WHERE set_by IS NOT NULL",
        "tables.created_at": "SELECT created_at FROM game.tables",
        "tables.started_at": "SELECT started_at FROM game.tables WHERE started_at IS NOT NULL",
        "tables.ended_at": "SELECT ended_at FROM game.tables",
        "seats.left_at": "SELECT left_at FROM game.seats WHERE left_at IS NOT NULL",
        "rounds.created_at": "SELECT created_at FROM game.rounds",
        "round_log.created_at": "SELECT created_at FROM game.round_log",
        "round_results.ended_at": "SELECT ended_at FROM game.round_results",
        "table_actions.created_at": "SELECT created_at FROM game.table_actions",
        "presence.last_seen_at": "SELECT last_seen_at FROM game.presence",
        "presence.acted_at": "SELECT acted_at FROM game.presence WHERE acted_at IS NOT NULL",
        "deadlines.created_at": "SELECT created_at FROM game.deadlines",
        "deadlines.handled_at": "SELECT handled_at FROM game.deadlines WHERE status <> 'pending'",
    }
    for name, query in times.items():
        found = [row[0] for row in await sql(settings, query)]
        assert found, name
        assert all(before <= moment <= after for moment in found), (name, found, before, after)
    # how long after it was armed each deadline is due: the timer's length, give or take a
    # slow transaction (not an hour)
    due = {
        "tables.fill_deadline_at": ("SELECT fill_deadline_at - created_at FROM game.tables", 600),
        "fill deadlines": (
            "SELECT due_at - created_at FROM game.deadlines WHERE kind = 'fill'",
            600,
        ),
        "deal deadlines": (
            "SELECT due_at - created_at FROM game.deadlines WHERE kind = 'deal'",
            0.2,
        ),
        "game deadlines": ("SELECT due_at - created_at FROM game.deadlines WHERE kind = 'game'", 2),
    }
    for name, (query, length_s) in due.items():
        found = [row[0] for row in await sql(settings, query)]
        assert found, name
        length = dt.timedelta(seconds=length_s)
        assert all(dt.timedelta(0) <= span <= length + slack for span in found), (name, found)


# --- the transaction's clock -------------------------------------------------------------------
async def test_a_change_that_waited_for_the_table_s_lock_is_dated_after_the_wait(client, settings):
    # Another transaction holds the table (and changes nothing in it): the clock a change
    # reads with the lock is the time it got the lock, so a timer it arms does not lose the
    # wait.  (In the lock's own select list, clock_timestamp() would be read before it.)
    op = await operator(client, settings)
    table = await create_table(client, op)
    table_id = uuid.UUID(table["id"])
    assert settings.database_url is not None
    holder = await asyncpg.connect(settings.database_url)
    database = Database.connect(settings.database_url, settings)
    try:
        async with holder.transaction():
            await holder.execute("SELECT 1 FROM game.tables WHERE id = $1 FOR UPDATE", table_id)

            async def lock_and_read_the_clock() -> dt.datetime:
                async with database.session() as session:
                    assert await lock_table(session, table_id) is not None
                    return await transaction_clock(session)

            waiting = asyncio.ensure_future(lock_and_read_the_clock())
            await until_waiting_on_locks(holder, 1)
            released = await holder.fetchval("SELECT clock_timestamp()")
        clock_read = await waiting
    finally:
        await holder.close()
        await database.dispose()
    assert clock_read >= released
