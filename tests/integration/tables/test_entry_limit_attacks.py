"""Entry limits attacked: many seats at once, seats and limit changes mixed with suspensions,
leaves and cancellations (no deadlock, no limit passed), and the kept changes replayed to the
limits the seat check enforces after every sequence of changes."""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import threading
import uuid
from typing import Any, NamedTuple

import httpx
import pytest

from app.accounts.limits import PERIOD_WINDOWS, EntryLimits, require_within_limits
from app.db import Database
from app.errors import ConflictError
from tests.helpers import assert_error, auth, create_user, from_threads
from tests.integration.tables.helpers import balance, create_table, operator, player
from tests.integration.tables.scenario import sql

pytestmark = pytest.mark.asyncio


async def _at_once(client: Any, requests: list[tuple[str, str, Any, str]]) -> list[Any]:
    """Send every ``(method, path, body, token)`` at once, each from its own thread, all
    released together; the responses in order."""
    barrier = threading.Barrier(len(requests), timeout=30)
    with from_threads(client, workers=len(requests)) as (sync, pool):

        def send(method: str, path: str, body: Any, token: str) -> httpx.Response:
            barrier.wait()
            return sync.request(method, path, json=body, headers=auth(token))

        loop = asyncio.get_running_loop()
        return list(await asyncio.gather(*(loop.run_in_executor(pool, send, *r) for r in requests)))


async def _paid(settings, user_id: str) -> int:
    """The entries the player paid and were not refunded (every seat of the test is recent)."""
    rows = await sql(
        settings,
        "SELECT coalesce(sum(t.entry_cents), 0) FROM game.seats s JOIN game.tables t"
        " ON t.id = s.table_id WHERE s.user_id = :user AND s.entry_transfer_id IS NOT NULL"
        " AND s.refund_transfer_id IS NULL",
        user=uuid.UUID(user_id),
    )
    return int(rows[0][0])


async def test_five_seats_sent_at_once_at_five_tables_pay_no_more_than_the_limit(client, settings):
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 10_000, op)
    put = await client.put("/players/me/limits/day", json={"cents": 1_000}, headers=auth(ana))
    assert put.status_code == 200, put.text
    tables = [await create_table(client, op, entry_cents=300) for _ in range(5)]
    responses = await _at_once(
        client, [("POST", f"/tables/{table['id']}/seat", None, ana) for table in tables]
    )
    assert sorted(r.status_code for r in responses) == [201, 201, 201, 409, 409], [
        r.text for r in responses
    ]
    for refused in (r for r in responses if r.status_code == 409):
        details = assert_error(refused, 409, "entry_limit_reached")["details"]
        assert (details["used_cents"], details["limit_cents"]) == (900, 1_000)
    assert await balance(client, ana) == 10_000 - 900
    assert await _paid(settings, ana_id) == 900
    day = (await client.get("/players/me/limits", headers=auth(ana))).json()["limits"][0]
    assert (day["used_cents"], day["remaining_cents"]) == (900, 100)


async def test_seats_changes_suspensions_leaves_and_cancels_at_once_neither_deadlock_nor_pass(
    client, settings
):
    # Every lock a seat takes (the account's share lock, the player's limits lock, the table's,
    # the seated accounts' share locks when the seat fills the table, the wallets) raced by
    # limit changes, a self-exclusion (the account's row, then each seat given up: account,
    # table), a leave and cancellations (table, wallets): a deadlock or a lock never granted
    # fails the request (statement timeout) and the test; no player pays past their limit.
    op = await operator(client, settings)
    players = [await player(client, settings, name, 10_000, op) for name in ("ana", "bia", "cid")]
    for _, token in players:
        put = await client.put("/players/me/limits/day", json={"cents": 900}, headers=auth(token))
        assert put.status_code == 200, put.text
    for round_ in range(3):
        # two-seat tables start when filled (``any_suspended`` under the table's lock)
        tables = [await create_table(client, op, entry_cents=100, seat_count=2) for _ in range(3)]
        tables += [await create_table(client, op, entry_cents=100, seat_count=4) for _ in range(2)]
        requests: list[tuple[str, str, Any, str]] = [
            ("POST", f"/tables/{table['id']}/seat", None, token)
            for table in tables
            for _, token in players
        ]
        (_, ana), (_, bia), (cid_id, cid) = players
        requests += [
            ("PUT", "/players/me/limits/day", {"cents": 700}, ana),  # a tightening
            ("PUT", "/players/me/limits/day", {"cents": 5_000}, bia),  # a loosening: waits
            ("PUT", "/players/me/limits/week", {"cents": 800}, bia),
            ("POST", f"/tables/{tables[3]['id']}/leave", None, ana),
            ("POST", f"/tables/{tables[4]['id']}/cancel", {"reason": "attack"}, op),
        ]
        if round_ == 2:
            requests.append(("POST", "/players/me/self-exclusion", {"days": 1}, cid))
        responses = await _at_once(client, requests)
        assert all(response.status_code < 500 for response in responses), [
            response.text for response in responses if response.status_code >= 500
        ]
        for response in responses:
            if response.status_code >= 400:
                code = response.json()["code"]
                assert code in {
                    "entry_limit_reached",
                    "table_full",
                    "table_started",
                    "table_closed",
                    "not_seated",
                    "account_suspended",
                    "not_authenticated",
                }, response.text
    (ana_id, _), (bia_id, _), (cid_id, _) = players
    # 15 seats of 100 each were asked for; from the first round on (at most 500 paid then),
    # ana's day limit is 700 and bia's week limit 800; cid's day limit stays 900
    assert await _paid(settings, ana_id) <= 700
    assert await _paid(settings, bia_id) <= 800
    assert await _paid(settings, cid_id) <= 900
    for user_id, token in players[:2]:
        assert await balance(client, token) == 10_000 - await _paid(settings, user_id)
    # cid excluded themselves: every seat at a table that had not started was given up
    rows = await sql(
        settings,
        "SELECT count(*) FROM game.seats s JOIN game.tables t ON t.id = s.table_id"
        " WHERE s.user_id = :user AND s.left_at IS NULL AND t.status = 'open'",
        user=uuid.UUID(cid_id),
    )
    assert rows[0][0] == 0


class Kept(NamedTuple):
    """One kept change, read out of its session."""

    period: str
    cents: int | None
    requested_at: dt.datetime
    applies_at: dt.datetime


def _replay(changes: list[Kept], at: dt.datetime) -> tuple[int | None, Any]:
    """The limit in force at ``at`` and the pending loosening ``(cents, applies_at)``, from the
    kept changes of one period alone: a change applies at its ``applies_at`` unless a later
    one was asked for before then (the latest wish wins)."""
    limit: int | None = None
    pending: tuple[int | None, dt.datetime] | None = None
    for change in changes:
        if change.requested_at > at:
            break
        if pending is not None and pending[1] <= change.requested_at:
            limit, pending = pending[0], None
        if change.applies_at == change.requested_at:
            limit, pending = change.cents, None
        else:
            pending = (change.cents, change.applies_at)
    if pending is not None and pending[1] <= at:
        limit, pending = pending[0], None
    return limit, pending


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_the_kept_changes_replay_to_the_limits_in_force_after_any_sequence(settings, seed):
    # Random changes of random periods at random moments (a step of exactly the cooling-off
    # included, the boundary where a loosening applies): after each, the state row, the view
    # and the check's limits are what the kept changes alone say.
    rng = random.Random(seed)
    cooling_off = dt.timedelta(hours=24)
    user_id = uuid.UUID(await create_user(settings, f"replay{seed}"))
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    micro = dt.timedelta(microseconds=1)
    steps = [dt.timedelta(0), micro, cooling_off / 2, cooling_off - micro, cooling_off]
    assert settings.database_url is not None
    database = Database.connect(settings.database_url, settings)
    try:
        await _changes_replay(database, rng, user_id, now, steps, cooling_off)
    finally:
        await database.dispose()


async def _changes_replay(
    database: Database,
    rng: random.Random,
    user_id: uuid.UUID,
    now: dt.datetime,
    steps: list[dt.timedelta],
    cooling_off: dt.timedelta,
) -> None:
    values: list[int | None] = [None, 1, 300, 500, 500, 800, 10**12]
    history: list[Kept] = []
    for _ in range(50):
        now += rng.choice(steps)
        period = rng.choice(list(PERIOD_WINDOWS))
        async with database.session() as session:
            await EntryLimits(session).change(user_id, period, rng.choice(values), cooling_off, now)
            await session.commit()
        for at in (now, now + cooling_off - dt.timedelta(microseconds=1), now + cooling_off):
            async with database.session() as session:
                history = [
                    Kept(c.period, c.cents, c.requested_at, c.applies_at)
                    for c in await EntryLimits(session).history(user_id)
                ]
                view = {p.period: p for p in await EntryLimits(session).view(user_id, at)}
                replayed = {
                    name: _replay([c for c in history if c.period == name], at)
                    for name in PERIOD_WINDOWS
                }
                for name, (limit, pending) in replayed.items():
                    seen = view[name]
                    assert seen.limit_cents == limit, (name, at, history)
                    assert (seen.pending_cents, seen.applies_at) == (pending or (None, None))
                    assert seen.pending == (pending is not None)
                # the seat check enforces the same: the lowest limit is payable, a cent more not
                lowest = min((v[0] for v in replayed.values() if v[0] is not None), default=None)
                if lowest is not None:
                    await require_within_limits(session, user_id, lowest, at)
                    with pytest.raises(ConflictError):
                        await require_within_limits(session, user_id, lowest + 1, at)
                await session.rollback()
    # each kept change waited the cooling-off exactly when it loosened the limit then in force
    for index, change in enumerate(history):
        earlier = [c for c in history[:index] if c.period == change.period]
        before, _ = _replay(earlier, change.requested_at)
        loosens = change.cents != before and (
            change.cents is None or (before is not None and change.cents > before)
        )
        wait = cooling_off if loosens else dt.timedelta(0)
        assert change.applies_at == change.requested_at + wait, (change, before)
