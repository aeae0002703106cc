"""Suspending and reinstating accounts: logins, tokens, seats, money and the kept record."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import asyncpg
import pytest

from app.tables.suspended import SuspendedSeats
from tests.helpers import (
    DEFAULT_PASSWORD,
    assert_error,
    auth,
    create_user,
    from_threads,
    login,
    sent_while_suspending,
    until_waiting_on_locks,
    worker_clock_off,
)
from tests.integration.tables.helpers import balance, create_table, operator, player, view
from tests.integration.tables.scenario import seat, sql, suspended_seats_job

pytestmark = pytest.mark.asyncio

REASON = {"reason": "chargeback under review, ticket 4411"}


async def _suspend(client, op: str, user_id: str, body=REASON):
    return await client.post(f"/admin/users/{user_id}/suspend", json=body, headers=auth(op))


async def _history(client, op: str, user_id: str) -> list[dict]:
    response = await client.get(f"/admin/users/{user_id}/suspensions", headers=auth(op))
    assert response.status_code == 200, response.text
    return list(response.json())


async def _active_seats(settings, user_id: str) -> list[tuple[str, str]]:
    """(table id, table status) of every seat the user holds and has not left."""
    rows = await sql(
        settings,
        "SELECT s.table_id::text, t.status FROM game.seats s JOIN game.tables t "
        "ON t.id = s.table_id WHERE s.user_id = :user AND s.left_at IS NULL ORDER BY 1",
        user=uuid.UUID(user_id),
    )
    return [tuple(row) for row in rows]


async def _wallet(settings, user_id: str) -> int:
    rows = await sql(
        settings,
        "SELECT balance_cents FROM ledger.accounts "
        "WHERE type = 'player_wallet' AND owner_id = :user",
        user=uuid.UUID(user_id),
    )
    return int(rows[0][0])


async def _set_suspended(settings, user_id: str, suspended: bool) -> None:
    """Suspend or reinstate in the database alone (no tokens revoked, no seat given up)."""
    value = "now()" if suspended else "NULL"
    await sql(
        settings,
        f"UPDATE game.users SET suspended_at = {value} WHERE id = :id",
        id=uuid.UUID(user_id),
    )


async def _seat_while_suspending(
    client, settings, table_id: str, seating: str, suspended_id: str, op: str
):
    """``seating`` takes a seat at the table, held (its row locked) until that request waits
    for it; then the operator suspends ``suspended_id``, whose seat release queues behind;
    then the table is let go.  The seat's and the suspension's responses."""
    holder = await asyncpg.connect(settings.database_url)
    try:
        held = holder.transaction()
        await held.start()
        await holder.execute(
            "SELECT 1 FROM game.tables WHERE id = $1 FOR UPDATE", uuid.UUID(table_id)
        )
        loop = asyncio.get_running_loop()
        with from_threads(client) as (sync, pool):
            seat_request = loop.run_in_executor(
                pool, lambda: sync.post(f"/tables/{table_id}/seat", headers=auth(seating))
            )
            await until_waiting_on_locks(holder, 1)
            suspension = loop.run_in_executor(
                pool,
                lambda: sync.post(
                    f"/admin/users/{suspended_id}/suspend", json=REASON, headers=auth(op)
                ),
            )
            await until_waiting_on_locks(holder, 2)  # the release waits behind the seat
            await held.rollback()
            return await seat_request, await suspension
    finally:
        await holder.close()


async def test_a_suspended_account_cannot_log_in_and_its_tokens_stop_working(client, settings):
    op = await operator(client, settings)
    user_id = await create_user(settings, "bia")
    tokens = [await login(client, "bia") for _ in range(2)]

    response = await _suspend(client, op, user_id)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["revoked_tokens"] == 2 and body["released_seats"] == 0
    assert body["user"]["suspended_at"] is not None
    assert body["change"]["action"] == "suspend" and body["change"]["reason"] == REASON["reason"]
    for token in tokens:
        assert_error(await client.get("/auth/me", headers=auth(token)), 401, "not_authenticated")
    right = {"username": "bia", "password": DEFAULT_PASSWORD}
    assert_error(await client.post("/auth/login", json=right), 403, "account_suspended")
    # told only to whoever knows the password
    wrong = {"username": "bia", "password": "not the password"}
    assert_error(await client.post("/auth/login", json=wrong), 401, "invalid_credentials")
    listed = await client.get("/admin/users", headers=auth(op))
    (shown,) = [user for user in listed.json() if user["id"] == user_id]
    assert shown["suspended_at"] == body["user"]["suspended_at"]

    response = await client.post(
        f"/admin/users/{user_id}/reinstate", json={"reason": "cleared"}, headers=auth(op)
    )
    assert response.status_code == 200, response.text
    assert response.json()["user"]["suspended_at"] is None
    token = await login(client, "bia")
    assert (await client.get("/auth/me", headers=auth(token))).status_code == 200
    # the tokens revoked by the suspension stay revoked
    assert_error(await client.get("/auth/me", headers=auth(tokens[0])), 401, "not_authenticated")
    operator_id = (await client.get("/auth/me", headers=auth(op))).json()["id"]
    history = await _history(client, op, user_id)
    assert [(h["action"], h["reason"], h["actor_id"]) for h in history] == [
        ("suspend", REASON["reason"], operator_id),
        ("reinstate", "cleared", operator_id),
    ]


async def test_a_token_is_refused_once_its_account_is_suspended_even_if_not_revoked(
    client, settings
):
    # the revocation and the suspension are one transaction; a token is honoured only for an
    # account not suspended anyway (a token issued by a login racing the suspension)
    user_id = await create_user(settings, "caio")
    token = await login(client, "caio")
    await _set_suspended(settings, user_id, True)
    assert_error(await client.get("/auth/me", headers=auth(token)), 401, "not_authenticated")


async def test_refused_suspensions_and_reinstatements_change_nothing(client, settings):
    op = await operator(client, settings)
    operator_id = (await client.get("/auth/me", headers=auth(op))).json()["id"]
    user_id, token = await player(client, settings, "dani", 0, op)
    unknown = str(uuid.uuid4())
    cases = [
        (_suspend(client, token, user_id), 403, "forbidden"),  # players cannot
        (_suspend(client, op, unknown), 404, "user_not_found"),
        (_suspend(client, op, operator_id), 409, "cannot_suspend_self"),
        (_suspend(client, op, user_id, {"reason": "   "}), 400, "validation_error"),
        (_suspend(client, op, user_id, {"reason": "x" * 501}), 400, "validation_error"),
        # PostgreSQL cannot store U+0000: refused here, not a 500 from the insert
        (_suspend(client, op, user_id, {"reason": "fraud\u0000"}), 400, "validation_error"),
        (_suspend(client, op, user_id, {}), 400, "validation_error"),
        (
            client.post(f"/admin/users/{user_id}/reinstate", json=REASON, headers=auth(op)),
            409,
            "not_suspended",
        ),
        (
            client.get(f"/admin/users/{unknown}/suspensions", headers=auth(op)),
            404,
            "user_not_found",
        ),
    ]
    for request, status, code in cases:
        assert_error(await request, status, code)
    assert await _history(client, op, user_id) == []
    assert (await client.get("/auth/me", headers=auth(token))).status_code == 200
    assert (await client.get("/auth/me", headers=auth(op))).status_code == 200

    assert (await _suspend(client, op, user_id)).status_code == 200
    assert_error(await _suspend(client, op, user_id), 409, "already_suspended")
    assert len(await _history(client, op, user_id)) == 1


async def test_suspension_gives_up_seats_at_open_tables_and_keeps_running_matches(client, settings):
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 2_000, op)
    others = [await player(client, settings, f"player{i}", 1_000, op) for i in range(3)]
    waiting = await create_table(client, others[0][1])  # 4 seats, entry 500
    mine = await create_table(client, ana)
    running = await create_table(client, others[0][1], seat_count=2)
    for table in (waiting, mine, running):
        await seat(client, ana, table["id"])
    await seat(client, others[1][1], waiting["id"])
    await seat(client, others[1][1], running["id"])  # full: the match starts
    assert await balance(client, ana) == 500
    assert (await view(client, op, running["id"]))["status"] == "running"

    response = await _suspend(client, op, ana_id)
    assert response.status_code == 200, response.text
    assert response.json()["released_seats"] == 2

    assert await _active_seats(settings, ana_id) == [(running["id"], "running")]
    assert await _wallet(settings, ana_id) == 1_500  # two entries back, the running one's kept
    # the open tables go on without her: one she sat at, one she created
    waiting_view = await view(client, others[1][1], waiting["id"])
    assert waiting_view["status"] == "open" and len(waiting_view["seats"]) == 1
    assert (await view(client, op, mine["id"]))["status"] == "open"
    assert (await view(client, op, running["id"]))["status"] == "running"


async def test_a_suspended_player_cannot_take_a_seat_or_open_a_table(client, settings):
    # A seat or a table asked for by a request authenticated before the suspension
    # committed: held on the account's row while the suspension is open, then refused.
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 1_000, op)
    table = await create_table(client, op)
    seated, created = await sent_while_suspending(
        client,
        settings,
        ana_id,
        (f"/tables/{table['id']}/seat", None, ana),
        ("/tables", {"seat_count": 2, "entry_cents": 100}, ana),
    )
    assert_error(seated, 403, "account_suspended")
    assert_error(created, 403, "account_suspended")
    assert await _active_seats(settings, ana_id) == []
    assert await sql(
        settings, "SELECT count(*) FROM game.tables WHERE creator_id = :u", u=uuid.UUID(ana_id)
    ) == [(0,)]


async def test_a_seat_taken_while_the_suspension_waits_is_given_up_by_it(client, settings):
    # The seat's request holds the account's row (share) while it waits for the table: the
    # suspension waits for the seat to commit, then gives it up.  Without the share lock the
    # suspension would commit first and the seat would land after it, kept.
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 1_000, op)
    table = await create_table(client, op)
    seated, suspended = await _seat_while_suspending(client, settings, table["id"], ana, ana_id, op)
    assert seated.status_code == 201, seated.text
    assert suspended.status_code == 200, suspended.text
    assert suspended.json()["released_seats"] == 1
    assert await _active_seats(settings, ana_id) == []
    assert await _wallet(settings, ana_id) == 1_000


async def test_the_periodic_release_gives_up_what_an_interrupted_suspension_left(
    client, settings, monkeypatch
):
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 1_000, op)
    bia_id, bia = await player(client, settings, "bia", 1_000, op)
    cid_id, cid = await player(client, settings, "cid", 1_000, op)
    tables = [await create_table(client, op) for _ in range(2)]
    for table in tables:
        await seat(client, ana, table["id"])
    await seat(client, bia, tables[0]["id"])
    await seat(client, cid, tables[1]["id"])
    # Suspended without the release (a request interrupted between the two): ana's seats go.
    # bia was suspended and reinstated before the job ran; cid is reinstated after the job
    # listed his seat and before it gives it up: both keep theirs.
    for user_id in (ana_id, bia_id, cid_id):
        await _set_suspended(settings, user_id, True)
    await _set_suspended(settings, bia_id, False)
    real_give_up = SuspendedSeats._give_up

    async def reinstated_meanwhile(self, table_id, user_id):
        await _set_suspended(settings, cid_id, False)
        return await real_give_up(self, table_id, user_id)

    monkeypatch.setattr(SuspendedSeats, "_give_up", reinstated_meanwhile)
    async with suspended_seats_job(settings) as job:
        assert await job.release() == 2
        assert await job.release() == 0
    assert await _active_seats(settings, ana_id) == []
    assert await _active_seats(settings, bia_id) == [(tables[0]["id"], "open")]
    assert await _active_seats(settings, cid_id) == [(tables[1]["id"], "open")]
    assert [await _wallet(settings, user) for user in (ana_id, bia_id, cid_id)] == [1_000, 500, 500]


async def test_an_operator_suspends_and_reinstates_from_the_command_line(client, settings, cli):
    from app.cli import main

    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 1_000, op)
    table = await create_table(client, op)
    await seat(client, ana, table["id"])

    async def raiz(*arguments: str):
        return await asyncio.to_thread(cli.invoke, main, ["users", *arguments])

    result = await raiz("suspend", "--username", "ANA", "--reason", "asked to stop playing")
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1] == (
        "suspended; 1 token(s) revoked, 1 seat(s) given up and refunded"
    )
    assert_error(await client.get("/auth/me", headers=auth(ana)), 401, "not_authenticated")
    assert await _active_seats(settings, ana_id) == []
    for arguments, code in (
        (("suspend", "--username", "ana", "--reason", "again"), "already_suspended"),
        (("suspend", "--username", "nobody", "--reason", "x"), "user_not_found"),
        (("suspend", "--username", "ana", "--reason", " "), "validation_error"),
        (("suspend", "--username", "ana", "--reason", "x" * 501), "validation_error"),
        (("suspend", "--username", "ana", "--reason", "fraud\u0000"), "validation_error"),
        (("reinstate", "--username", "nobody", "--reason", "x"), "user_not_found"),
    ):
        result = await raiz(*arguments)
        assert result.exit_code == 2, result.output
        assert f"error: {code}:" in result.output
    history = await _history(client, op, ana_id)
    assert [(h["action"], h["actor_id"]) for h in history] == [("suspend", None)]

    result = await raiz("reinstate", "--username", "ana", "--reason", "self-exclusion ended")
    assert result.exit_code == 0, result.output
    await login(client, "ana")
    result = await raiz("reinstate", "--username", "ana", "--reason", "again")
    assert result.exit_code == 2 and "error: not_suspended:" in result.output


async def test_a_table_filled_while_a_seated_account_is_suspended_does_not_start(client, settings):
    # bia's seat fills the table while ana's suspension commits: the match must not deal ana
    # in (in a two-player match her entry would go to bia); the table waits, ana's seat is
    # given up, and the table is open again with bia alone.
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 1_000, op)
    bia_id, bia = await player(client, settings, "bia", 1_000, op)
    table = await create_table(client, op, seat_count=2)
    await seat(client, ana, table["id"])
    seated, suspended = await _seat_while_suspending(client, settings, table["id"], bia, ana_id, op)
    assert seated.status_code == 201, seated.text
    assert suspended.status_code == 200, suspended.text
    assert suspended.json()["released_seats"] == 1
    assert (await view(client, bia, table["id"]))["status"] == "open"
    assert await _active_seats(settings, ana_id) == []
    assert await _active_seats(settings, bia_id) == [(table["id"], "open")]
    assert await _wallet(settings, ana_id) == 1_000


async def test_the_creator_cannot_start_a_table_where_a_suspended_account_sits(client, settings):
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 1_000, op)
    _, bia = await player(client, settings, "bia", 1_000, op)
    table = await create_table(client, bia)
    await seat(client, ana, table["id"])
    await seat(client, bia, table["id"])
    await _set_suspended(settings, ana_id, True)  # its seat not given up yet
    refused = await client.post(f"/tables/{table['id']}/start", headers=auth(bia))
    assert_error(refused, 409, "seated_account_suspended")
    assert (await view(client, bia, table["id"]))["status"] == "open"
    assert len(await _active_seats(settings, ana_id)) == 1


async def test_a_table_filling_waits_for_a_seated_accounts_suspension_to_commit(client, settings):
    # The suspension of ana is being committed (its row locked) when bia's seat fills the
    # table: the seat waits for it and sees it, rather than dealing ana in from before.
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 1_000, op)
    _, bia = await player(client, settings, "bia", 1_000, op)
    table = await create_table(client, op, seat_count=2)
    await seat(client, ana, table["id"])
    (seated,) = await sent_while_suspending(
        client, settings, ana_id, (f"/tables/{table['id']}/seat", None, bia)
    )
    assert seated.status_code == 201, seated.text
    assert (await view(client, bia, table["id"]))["status"] == "open"


async def test_compliance_staff_read_the_suspensions_and_each_read_is_recorded(client, settings):
    op = await operator(client, settings)
    ana_id, _ = await player(client, settings, "ana", 0, op)
    await create_user(settings, "auditor", role="compliance")
    auditor = await login(client, "auditor")
    assert (await _suspend(client, op, ana_id)).status_code == 200
    assert [h["action"] for h in await _history(client, auditor, ana_id)] == ["suspend"]
    assert [h["action"] for h in await _history(client, op, ana_id)] == ["suspend"]
    refused = await client.get(f"/admin/users/{uuid.uuid4()}/suspensions", headers=auth(auditor))
    assert_error(refused, 404, "user_not_found")
    log = (await client.get("/admin/access-log", headers=auth(op))).json()
    auditor_id = (await client.get("/auth/me", headers=auth(auditor))).json()["id"]
    assert [(row["action"], row["actor"], row["target"]) for row in log] == [
        ("read_suspensions", auditor_id, ana_id)  # the operator's read and the 404 are not
    ]
    # compliance staff read, they do not suspend
    assert_error(await _suspend(client, auditor, ana_id), 403, "forbidden")


async def test_a_full_table_whose_suspended_account_was_reinstated_starts_by_the_job(
    client, settings
):
    # bia's seat filled the table while ana was suspended (the table waits for ana's seat to
    # be given up), then ana was reinstated before her seat was: it stays, the table takes no
    # seat any more and only its creator could start it.  The job starts it, as bia's seat
    # would have; it leaves waiting a full table whose seated account is still suspended
    # (cid's seat, which it does not reach here), and one past its fill deadline (its timer
    # cancels it).
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 1_000, op)
    _, bia = await player(client, settings, "bia", 1_000, op)
    cid_id, cid = await player(client, settings, "cid", 1_000, op)
    _, dan = await player(client, settings, "dan", 1_000, op)
    _, eva = await player(client, settings, "eva", 1_000, op)
    table, waiting, late = [await create_table(client, op, seat_count=2) for _ in range(3)]
    await seat(client, ana, table["id"])
    await seat(client, ana, late["id"])
    await seat(client, cid, waiting["id"])
    for suspended in (ana_id, cid_id):
        await _set_suspended(settings, suspended, True)
    await seat(client, bia, table["id"])
    await seat(client, eva, late["id"])
    await seat(client, dan, waiting["id"])
    assert (await view(client, bia, table["id"]))["status"] == "open"
    await _set_suspended(settings, ana_id, False)
    await sql(
        settings,
        "UPDATE game.tables SET fill_deadline_at = now() - interval '1 second' WHERE id = :id",
        id=uuid.UUID(late["id"]),
    )
    async with suspended_seats_job(settings) as job:

        async def not_reached(table_id: uuid.UUID, user_id: uuid.UUID) -> int:
            return 0

        job._give_up = not_reached  # type: ignore[method-assign]
        assert await job.release() == 0
    started = await view(client, bia, table["id"])
    assert started["status"] == "running" and len(started["seats"]) == 2
    assert (await view(client, dan, waiting["id"]))["status"] == "open"
    assert (await view(client, eva, late["id"]))["status"] != "running"


async def test_operators_list_the_suspended_accounts(client, settings):
    op = await operator(client, settings)
    ids = [(await player(client, settings, f"player{n}", 0, op))[0] for n in range(4)]
    for user_id in (ids[1], ids[3]):
        assert (await _suspend(client, op, user_id)).status_code == 200

    async def listed(query: str) -> list[str]:
        response = await client.get(f"/admin/users?{query}", headers=auth(op))
        assert response.status_code == 200, response.text
        return [user["id"] for user in response.json()]

    assert [u for u in await listed("suspended=true") if u in ids] == [ids[1], ids[3]]
    assert [u for u in await listed("suspended=false") if u in ids] == [ids[0], ids[2]]
    assert [u for u in await listed("") if u in ids] == ids
    # with the keyset: the suspended accounts after the first one
    assert await listed(f"suspended=true&after={ids[1]}") == [ids[3]]
    assert_error(
        await client.get("/admin/users?suspended=maybe", headers=auth(op)), 400, "validation_error"
    )


async def test_one_table_failing_does_not_hold_up_the_job_for_the_others(
    client, settings, monkeypatch
):
    from app.tables.service import TableService

    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 1_000, op)
    _, bia = await player(client, settings, "bia", 1_000, op)
    cid_id, cid = await player(client, settings, "cid", 1_000, op)
    _, dan = await player(client, settings, "dan", 1_000, op)
    open_tables = sorted([await create_table(client, op) for _ in range(2)], key=lambda t: t["id"])
    for table in open_tables:
        await seat(client, ana, table["id"])
    full = sorted(
        [await create_table(client, op, seat_count=2) for _ in range(2)], key=lambda t: t["id"]
    )
    await seat(client, cid, full[0]["id"])
    await seat(client, cid, full[1]["id"])
    await _set_suspended(settings, cid_id, True)
    await seat(client, bia, full[0]["id"])
    await seat(client, dan, full[1]["id"])
    await _set_suspended(settings, cid_id, False)  # both full tables wait for the job
    await _set_suspended(settings, ana_id, True)
    broken = {uuid.UUID(open_tables[0]["id"]), uuid.UUID(full[0]["id"])}
    real_give_up, real_start = TableService.give_up_seat, TableService.start_full

    async def give_up_seat(self, table_id, user_id):
        if table_id in broken:
            raise RuntimeError("a failing table")
        return await real_give_up(self, table_id, user_id)

    async def start_full(self, table_id):
        if table_id in broken:
            raise RuntimeError("a failing table")
        return await real_start(self, table_id)

    monkeypatch.setattr(TableService, "give_up_seat", give_up_seat)
    monkeypatch.setattr(TableService, "start_full", start_full)
    async with suspended_seats_job(settings) as job:
        assert await job.release() == 1
    assert await _active_seats(settings, ana_id) == [(open_tables[0]["id"], "open")]
    assert (await view(client, op, full[0]["id"]))["status"] == "open"
    assert (await view(client, op, full[1]["id"]))["status"] == "running"


async def test_the_job_starts_a_full_table_before_its_fill_deadline_by_the_database_s_clock(
    client, settings, monkeypatch
):
    # The table's fill deadline is ten minutes away by the database's clock: a worker an hour
    # ahead (past it by its own clock) still starts it.
    op = await operator(client, settings)
    ana_id, ana = await player(client, settings, "ana", 1_000, op)
    _, bia = await player(client, settings, "bia", 1_000, op)
    table = await create_table(client, op, seat_count=2)
    await seat(client, ana, table["id"])
    await _set_suspended(settings, ana_id, True)
    await seat(client, bia, table["id"])
    assert (await view(client, bia, table["id"]))["status"] == "open"
    await _set_suspended(settings, ana_id, False)
    async with suspended_seats_job(settings) as job:
        with monkeypatch.context() as ahead:
            worker_clock_off(ahead, dt.timedelta(hours=1))
            assert await job.release() == 0
    assert (await view(client, bia, table["id"]))["status"] == "running"
