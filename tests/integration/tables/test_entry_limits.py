"""Entry limits a player sets on themselves: tightened at once, loosened after the cooling-off,
enforced on every paid seat over a rolling day, week and month, refunds aside; every change
kept and shown to staff."""

from __future__ import annotations

import datetime as dt
import uuid

import asyncpg
import pytest

from tests.conftest import make_settings
from tests.helpers import assert_error, auth, create_user, login, worker_clock_off
from tests.integration.tables.helpers import balance, create_table, operator, player
from tests.integration.tables.scenario import seat, sql

pytestmark = pytest.mark.asyncio

COOLING_OFF_S = 3600


@pytest.fixture
def settings(database_url):
    return make_settings(
        database_url,
        allow_timer_overrides=True,
        presence_grace_s=3600,
        limit_cooling_off_s=COOLING_OFF_S,
    )


async def _put(client, token: str, period: str, body) -> object:
    return await client.put(f"/players/me/limits/{period}", json=body, headers=auth(token))


async def _set(client, token: str, period: str, cents: int | None) -> dict:
    response = await _put(client, token, period, {"cents": cents})
    assert response.status_code == 200, response.text
    return dict(response.json())


async def _limits(client, token: str) -> dict[str, dict]:
    response = await client.get("/players/me/limits", headers=auth(token))
    assert response.status_code == 200, response.text
    limits = response.json()["limits"]
    assert [limit["period"] for limit in limits] == ["day", "week", "month"]
    return {limit["period"]: limit for limit in limits}


async def _superuser(settings, *statements: tuple[str, str]) -> None:
    """Run ``(statement, user id)`` pairs skipping the triggers (as only a superuser can):
    time moved for seats and kept limit changes, which nobody may rewrite."""
    connection = await asyncpg.connect(settings.database_url)
    try:
        await connection.execute("SET session_replication_role = replica")
        for statement, user_id in statements:
            await connection.execute(statement, uuid.UUID(user_id))
    finally:
        await connection.close()


async def _cooling_off_passes(settings, user_id: str) -> None:
    """As if the cooling-off had passed: everything the player asked for was asked earlier."""
    shift = f"interval '{COOLING_OFF_S + 1} seconds'"
    await _superuser(
        settings,
        (
            f"UPDATE game.entry_limits SET pending_applies_at = pending_applies_at - {shift} "
            "WHERE user_id = $1",
            user_id,
        ),
        (
            f"UPDATE game.entry_limit_changes SET requested_at = requested_at - {shift}, "
            f"applies_at = applies_at - {shift} WHERE user_id = $1",
            user_id,
        ),
    )


async def _seats_taken_earlier(settings, user_id: str, hours: int) -> None:
    await _superuser(
        settings,
        (
            f"UPDATE game.seats SET seated_at = seated_at - interval '{hours} hours' "
            "WHERE user_id = $1",
            user_id,
        ),
    )


def _about(value: str, expected: dt.datetime) -> bool:
    return abs((dt.datetime.fromisoformat(value) - expected).total_seconds()) < 60


async def test_a_tightening_applies_at_once_and_a_loosening_after_the_cooling_off(client, settings):
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 10_000, op)
    assert await _limits(client, ana) == {
        period: {
            "period": period,
            "limit_cents": None,
            "pending": None,
            "used_cents": 0,
            "remaining_cents": None,
        }
        for period in ("day", "week", "month")
    }
    first = await _set(client, ana, "day", 1_000)
    assert (first["limit_cents"], first["pending"]) == (1_000, None)
    assert first["remaining_cents"] == 1_000

    # a higher limit waits: the old one stays in force and is enforced meanwhile
    raised = await _set(client, ana, "day", 2_000)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=COOLING_OFF_S)
    assert raised["limit_cents"] == 1_000 and raised["pending"]["cents"] == 2_000
    assert _about(raised["pending"]["applies_at"], later)
    tables = [await create_table(client, op, entry_cents=600) for _ in range(3)]
    await seat(client, ana, tables[0]["id"])
    refused = await client.post(f"/tables/{tables[1]['id']}/seat", headers=auth(ana))
    assert_error(refused, 409, "entry_limit_reached")

    # the latest wish wins: a newer loosening replaces the pending one, with its own wait
    replaced = await _set(client, ana, "day", 1_500)
    assert (replaced["limit_cents"], replaced["pending"]["cents"]) == (1_000, 1_500)
    assert (await _limits(client, ana))["day"]["pending"]["cents"] == 1_500
    # a tightening cancels a pending loosening
    lowered = await _set(client, ana, "day", 800)
    assert (lowered["limit_cents"], lowered["pending"]) == (800, None)
    assert (lowered["used_cents"], lowered["remaining_cents"]) == (600, 200)
    # a removal is a loosening
    removed = await _set(client, ana, "day", None)
    assert removed["limit_cents"] == 800
    assert removed["pending"]["cents"] is None
    assert _about(removed["pending"]["applies_at"], later)
    assert_error(
        await client.post(f"/tables/{tables[1]['id']}/seat", headers=auth(ana)),
        409,
        "entry_limit_reached",
    )

    await _cooling_off_passes(settings, ana_id)
    day = (await _limits(client, ana))["day"]
    assert (day["limit_cents"], day["pending"], day["remaining_cents"]) == (None, None, None)
    await seat(client, ana, tables[1]["id"])  # no limit any more
    # a limit over a due change: the due change counts as in force (none), so any is tighter
    assert (await _set(client, ana, "day", 5_000))["pending"] is None


async def test_a_loosening_applies_once_its_cooling_off_has_passed(client, settings):
    op = await operator(client, settings)
    bia_id, bia = await player(client, settings, "bia", 10_000, op)
    await _set(client, bia, "week", 500)
    assert (await _set(client, bia, "week", 1_200))["limit_cents"] == 500
    tables = [await create_table(client, op, entry_cents=500) for _ in range(2)]
    await seat(client, bia, tables[0]["id"])
    assert_error(
        await client.post(f"/tables/{tables[1]['id']}/seat", headers=auth(bia)),
        409,
        "entry_limit_reached",
    )
    await _cooling_off_passes(settings, bia_id)
    week = (await _limits(client, bia))["week"]
    assert (week["limit_cents"], week["pending"], week["used_cents"]) == (1_200, None, 500)
    assert week["remaining_cents"] == 700
    await seat(client, bia, tables[1]["id"])


async def test_a_seat_at_the_limit_is_taken_and_one_cent_over_is_refused_changing_nothing(
    client, settings
):
    op = await operator(client, settings)
    _, cid = await player(client, settings, "cid", 10_000, op)
    await _set(client, cid, "day", 1_000)
    tables = [await create_table(client, op, entry_cents=cents) for cents in (400, 600, 1)]
    await seat(client, cid, tables[0]["id"])
    await seat(client, cid, tables[1]["id"])  # used + entry = limit: allowed
    before = await balance(client, cid)
    statement = (await client.get("/wallet/statement", headers=auth(cid))).json()
    refused = await client.post(f"/tables/{tables[2]['id']}/seat", headers=auth(cid))
    error = assert_error(refused, 409, "entry_limit_reached")
    assert error["details"] == {
        "period": "day",
        "limit_cents": 1_000,
        "used_cents": 1_000,
        "entry_cents": 1,
    }
    assert "limit" in error["message"]
    assert await balance(client, cid) == before == 9_000
    assert (await client.get("/wallet/statement", headers=auth(cid))).json() == statement
    rows = await sql(
        settings,
        "SELECT count(*) FROM game.seats WHERE table_id = :table",
        table=uuid.UUID(tables[2]["id"]),
    )
    assert rows[0][0] == 0
    day = (await _limits(client, cid))["day"]
    assert (day["used_cents"], day["remaining_cents"]) == (1_000, 0)
    # a free table is not limited, even past a limit tightened under what was paid
    await _set(client, cid, "day", 1)
    free = await create_table(client, op, entry_cents=0)
    await seat(client, cid, free["id"])


@pytest.mark.parametrize("period", ["day", "week", "month"])
async def test_each_period_is_enforced_on_its_own(client, settings, period):
    op = await operator(client, settings)
    _, dan = await player(client, settings, "dan", 10_000, op)
    await _set(client, dan, period, 700)
    tables = [await create_table(client, op, entry_cents=cents) for cents in (500, 300)]
    await seat(client, dan, tables[0]["id"])
    refused = await client.post(f"/tables/{tables[1]['id']}/seat", headers=auth(dan))
    error = assert_error(refused, 409, "entry_limit_reached")
    assert (error["details"]["period"], error["details"]["limit_cents"]) == (period, 700)
    limits = await _limits(client, dan)
    assert {p: limits[p]["limit_cents"] for p in limits} == {
        p: 700 if p == period else None for p in ("day", "week", "month")
    }


async def test_refunded_entries_and_entries_older_than_the_window_do_not_count(client, settings):
    op = await operator(client, settings)
    eva_id, eva = await player(client, settings, "eva", 10_000, op)
    await _set(client, eva, "day", 1_000)
    await _set(client, eva, "week", 1_500)
    tables = [await create_table(client, op, entry_cents=600) for _ in range(5)]
    # left before the start: refunded
    await seat(client, eva, tables[0]["id"])
    left = await client.post(f"/tables/{tables[0]['id']}/leave", headers=auth(eva))
    assert left.status_code in (200, 204), left.text
    assert (await _limits(client, eva))["day"]["used_cents"] == 0
    # a cancelled table: refunded
    await seat(client, eva, tables[1]["id"])
    cancelled = await client.post(f"/tables/{tables[1]['id']}/cancel", headers=auth(op))
    assert cancelled.status_code == 200, cancelled.text
    assert (await _limits(client, eva))["day"]["used_cents"] == 0
    await seat(client, eva, tables[2]["id"])
    assert_error(
        await client.post(f"/tables/{tables[3]['id']}/seat", headers=auth(eva)),
        409,
        "entry_limit_reached",
    )
    # a day later the seat counts for the week, not the day
    await _seats_taken_earlier(settings, eva_id, 25)
    limits = await _limits(client, eva)
    assert (limits["day"]["used_cents"], limits["week"]["used_cents"]) == (0, 600)
    assert limits["month"]["used_cents"] == 600
    await seat(client, eva, tables[3]["id"])
    refused = await client.post(f"/tables/{tables[4]['id']}/seat", headers=auth(eva))
    assert assert_error(refused, 409, "entry_limit_reached")["details"]["period"] == "day"
    # eight days later neither seat counts for the week
    await _seats_taken_earlier(settings, eva_id, 8 * 24)
    limits = await _limits(client, eva)
    assert (limits["day"]["used_cents"], limits["week"]["used_cents"]) == (0, 0)
    assert limits["month"]["used_cents"] == 1_200
    await seat(client, eva, tables[4]["id"])


async def test_the_month_is_thirty_days_and_what_remains_is_never_below_zero(client, settings):
    op = await operator(client, settings)
    fay_id, fay = await player(client, settings, "fay", 10_000, op)
    await seat(client, fay, (await create_table(client, op, entry_cents=600))["id"])
    # a lower cap applies at once, below what was paid already: nothing remains, not less
    await _set(client, fay, "month", 400)
    limits = await _limits(client, fay)
    assert (limits["month"]["used_cents"], limits["month"]["remaining_cents"]) == (600, 0)
    # 29 days and 23 hours later the seat still counts for the month; 30 days later, not
    await _seats_taken_earlier(settings, fay_id, 29 * 24 + 23)
    assert (await _limits(client, fay))["month"]["used_cents"] == 600
    await _seats_taken_earlier(settings, fay_id, 2)
    limits = await _limits(client, fay)
    assert (limits["month"]["used_cents"], limits["month"]["remaining_cents"]) == (0, 400)


async def test_bad_limit_requests_are_refused_and_change_nothing(client, settings):
    op = await operator(client, settings)
    fay_id, fay = await player(client, settings, "fay", 0, op)
    for period in ("year", "DAY", "days"):
        assert_error(await _put(client, fay, period, {"cents": 100}), 404, "unknown_period")
    for body in (
        {"cents": 0},
        {"cents": -1},
        {"cents": 10**12 + 1},
        {"cents": "500"},
        {"cents": 5.0},
        {"cents": True},
        {"cents": 500, "extra": 1},
        {},
        [500],
    ):
        assert_error(await _put(client, fay, "day", body), 400, "validation_error")
    assert (await _set(client, fay, "month", 10**12))["limit_cents"] == 10**12
    assert_error(
        await client.put("/players/me/limits/day", json={"cents": 100}), 401, "not_authenticated"
    )
    assert_error(await client.get("/players/me/limits"), 401, "not_authenticated")
    # staff have no limits of their own: as for the self-exclusion, the route is a player's
    assert_error(await _put(client, op, "day", {"cents": 100}), 403, "forbidden")
    assert_error(await client.get("/players/me/limits", headers=auth(op)), 403, "forbidden")
    rows = await sql(
        settings,
        "SELECT period, cents FROM game.entry_limit_changes WHERE user_id = :user",
        user=uuid.UUID(fay_id),
    )
    assert [tuple(row) for row in rows] == [("month", 10**12)]


async def test_staff_read_the_limits_and_every_change_and_a_compliance_read_is_logged(
    client, settings
):
    op = await operator(client, settings)
    gil_id, gil = await player(client, settings, "gil", 5_000, op)
    await create_user(settings, "auditor", role="compliance")
    auditor = await login(client, "auditor")
    await _set(client, gil, "day", 1_000)
    await _set(client, gil, "day", 3_000)
    await _set(client, gil, "month", None)
    await seat(client, gil, (await create_table(client, op, entry_cents=250))["id"])

    for token in (op, auditor):
        response = await client.get(f"/admin/users/{gil_id}/limits", headers=auth(token))
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["user_id"] == gil_id
        assert body["limits"] == list((await _limits(client, gil)).values())
        assert body["limits"][0]["used_cents"] == 250
        changes = body["changes"]
        assert [(c["period"], c["cents"], c["actor_id"]) for c in changes] == [
            ("day", 1_000, gil_id),
            ("day", 3_000, gil_id),
            ("month", None, gil_id),
        ]
        now = dt.datetime.now(dt.UTC)
        assert changes[0]["applies_at"] == changes[0]["requested_at"]
        assert _about(changes[1]["applies_at"], now + dt.timedelta(seconds=COOLING_OFF_S))
        assert changes[2]["applies_at"] == changes[2]["requested_at"]  # nothing to loosen
    assert (await client.get("/players/me/limits", headers=auth(gil))).json()["changes"] is None
    missing = await client.get(f"/admin/users/{uuid.uuid4()}/limits", headers=auth(auditor))
    assert_error(missing, 404, "user_not_found")
    assert_error(
        await client.get(f"/admin/users/{gil_id}/limits", headers=auth(gil)), 403, "forbidden"
    )
    log = (await client.get("/admin/access-log", headers=auth(op))).json()
    auditor_id = (await client.get("/auth/me", headers=auth(auditor))).json()["id"]
    assert [(row["action"], row["actor"], row["target"]) for row in log] == [
        ("read_entry_limits", auditor_id, gil_id)  # the operator's read and the 404 are not
    ]


async def test_the_kept_changes_are_refused_an_update_or_a_delete_even_by_their_owner(
    client, settings
):
    # the serving role has no such privilege (test_db_roles); the triggers refuse every role
    op = await operator(client, settings)
    _, hal = await player(client, settings, "hal", 0, op)
    await _set(client, hal, "day", 1_000)
    owner = await asyncpg.connect(settings.database_url)
    try:
        for statement in (
            "UPDATE game.entry_limit_changes SET cents = NULL",
            "DELETE FROM game.entry_limit_changes",
            "TRUNCATE game.entry_limit_changes",
        ):
            with pytest.raises(asyncpg.RaiseError, match="append-only"):
                await owner.execute(statement)
        assert await owner.fetchval("SELECT cents FROM game.entry_limit_changes") == 1_000
        # nor does a limit as it stands ever become another player's or period's
        for statement in (
            "UPDATE game.entry_limits SET period = 'week'",
            "UPDATE game.entry_limits SET user_id = (SELECT id FROM game.users WHERE id <> "
            "entry_limits.user_id LIMIT 1)",
        ):
            with pytest.raises(asyncpg.RaiseError, match="cannot change"):
                await owner.execute(statement)
    finally:
        await owner.close()


async def test_the_used_amount_is_the_entry_each_seat_recorded(client, settings):
    # A seat records its table's entry when it is taken (game_0022) and the limits sum that,
    # not the table's: a seat whose record differs (written here with the triggers off, as
    # only a superuser can) counts for what it recorded.
    op = await operator(client, settings)
    ivo_id, ivo = await player(client, settings, "ivo", 10_000, op)
    await _set(client, ivo, "day", 1_000)
    tables = [await create_table(client, op, entry_cents=cents) for cents in (600, 750, 1)]
    await seat(client, ivo, tables[0]["id"])
    rows = await sql(
        settings,
        "SELECT s.entry_cents, t.entry_cents FROM game.seats s JOIN game.tables t "
        "ON t.id = s.table_id WHERE s.user_id = :user",
        user=uuid.UUID(ivo_id),
    )
    assert [tuple(row) for row in rows] == [(600, 600)]
    await _superuser(
        settings, ("UPDATE game.seats SET entry_cents = 250 WHERE user_id = $1", ivo_id)
    )
    assert (await _limits(client, ivo))["day"]["used_cents"] == 250
    await seat(client, ivo, tables[1]["id"])  # 250 + 750 = 1,000: within the limit
    refused = await client.post(f"/tables/{tables[2]['id']}/seat", headers=auth(ivo))
    assert assert_error(refused, 409, "entry_limit_reached")["details"]["used_cents"] == 1_000


async def test_a_seat_pays_its_table_entry_and_keeps_it(client, settings):
    # Nobody, the owner included, inserts a seat with another entry than its table's, nor
    # changes a seat's entry afterwards; an insert leaving it out (a release older than
    # game_0022, during a rolling deploy) gets the table's.
    op = await operator(client, settings)
    jon_id, jon = await player(client, settings, "jon", 10_000, op)
    table = await create_table(client, op, entry_cents=400, seat_count=3)
    await seat(client, jon, table["id"])
    kim_id, _ = await player(client, settings, "kim", 0, op)
    owner = await asyncpg.connect(settings.database_url)
    try:
        insert = (
            "INSERT INTO game.seats (table_id, user_id, position{}) VALUES ($1, $2, 1{}) "
            "RETURNING entry_cents, seated_at, now() AS now"
        )
        for cents in (0, 399, 401):
            with pytest.raises(asyncpg.RaiseError, match=r"pays its entry \(400 cents\)"):
                await owner.fetchrow(
                    insert.format(", entry_cents", ", $3"),
                    uuid.UUID(table["id"]),
                    uuid.UUID(kim_id),
                    cents,
                )
        row = await owner.fetchrow(insert.format("", ""), uuid.UUID(table["id"]), uuid.UUID(kim_id))
        # the entry is the table's, the seating time the database's now()
        assert (row["entry_cents"], row["seated_at"]) == (400, row["now"])
        for change in ("entry_cents + 1", "0", "entry_cents * 2"):
            with pytest.raises(asyncpg.RaiseError, match=r"the entry_cents of seat .+ cannot"):
                await owner.execute(
                    f"UPDATE game.seats SET entry_cents = {change} WHERE user_id = $1",
                    uuid.UUID(jon_id),
                )
        assert await owner.fetchval(
            "SELECT array_agg(entry_cents ORDER BY position) FROM game.seats WHERE table_id = $1",
            uuid.UUID(table["id"]),
        ) == [400, 400]
    finally:
        await owner.close()


async def test_a_worker_whose_clock_is_late_neither_dates_a_seat_nor_moves_the_window(
    client, settings, monkeypatch
):
    # Two workers: a seat taken on one whose clock is two days late still counts for the
    # day on the other (its seating time is the database's); the late worker's check sees it
    # too.  With the workers' clocks, the seat would be dated two days back and a second
    # entry would pass the day's limit.
    op = await operator(client, settings)
    lea_id, lea = await player(client, settings, "lea", 10_000, op)
    await _set(client, lea, "day", 1_000)
    tables = [await create_table(client, op, entry_cents=600) for _ in range(3)]
    with monkeypatch.context() as late:
        worker_clock_off(late, -dt.timedelta(days=2))
        await seat(client, lea, tables[0]["id"])
        assert_error(
            await client.post(f"/tables/{tables[1]['id']}/seat", headers=auth(lea)),
            409,
            "entry_limit_reached",
        )
    rows = await sql(
        settings,
        "SELECT now() - seated_at FROM game.seats WHERE user_id = :user",
        user=uuid.UUID(lea_id),
    )
    assert dt.timedelta(0) <= rows[0][0] < dt.timedelta(minutes=1)
    refused = await client.post(f"/tables/{tables[2]['id']}/seat", headers=auth(lea))
    assert assert_error(refused, 409, "entry_limit_reached")["details"]["used_cents"] == 600


async def test_a_worker_whose_clock_is_early_reads_and_changes_the_limits_at_the_database_time(
    client, settings, monkeypatch
):
    # A seat 23.5 hours old still counts for the day on a worker 1 hour ahead, whose check
    # refuses the next entry; a loosening asked there applies a cooling-off after the
    # database's now, not after the worker's.
    op = await operator(client, settings)
    mia_id, mia = await player(client, settings, "mia", 10_000, op)
    await _set(client, mia, "day", 1_000)
    tables = [
        await create_table(client, op, entry_cents=600, fill_deadline_s=86_400) for _ in range(2)
    ]
    await seat(client, mia, tables[0]["id"])
    await _superuser(
        settings,
        (
            "UPDATE game.seats SET seated_at = seated_at - interval '23 hours 30 minutes' "
            "WHERE user_id = $1",
            mia_id,
        ),
    )
    with monkeypatch.context() as early:
        worker_clock_off(early, dt.timedelta(hours=1))
        assert (await _limits(client, mia))["day"]["used_cents"] == 600
        assert_error(
            await client.post(f"/tables/{tables[1]['id']}/seat", headers=auth(mia)),
            409,
            "entry_limit_reached",
        )
        raised = await _set(client, mia, "day", 2_000)
    rows = await sql(
        settings,
        "SELECT requested_at, applies_at, now() FROM game.entry_limit_changes "
        "WHERE user_id = :user ORDER BY id",
        user=uuid.UUID(mia_id),
    )
    requested, applies, now = rows[-1]
    assert dt.timedelta(0) <= now - requested < dt.timedelta(minutes=1)
    assert applies - requested == dt.timedelta(seconds=COOLING_OFF_S)
    assert dt.datetime.fromisoformat(raised["pending"]["applies_at"]) == applies
