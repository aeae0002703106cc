"""Least privilege in the database: the service serves as a login role of the ``raiz_service``
group (migrations ``*_service_role``), which owns nothing.

It plays a whole match, reconciles, verifies and checkpoints; it cannot drop, alter or
truncate a table, disable or drop the triggers that keep rounds and the ledger append-only,
nor delete or update an append-only row.  Migrations run as the schemas' owner
(``RAIZ_MIGRATION_DATABASE_URL``).  Every login role a test creates is cluster-wide: its name
is unique per run and it is dropped afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator

import anyio
import asyncpg
import pytest
from click.testing import CliRunner
from sqlalchemy import update
from sqlalchemy.engine import make_url

from app.cli import EXIT_CANNOT_RUN, main
from app.compliance.audit import verify_all
from app.compliance.checkpoints import make_checkpoint
from app.compliance.monitor import AuditMonitor
from app.config import ConfigurationError, Settings, get_settings
from app.db import Database
from app.db.base import utcnow
from app.timers import Deadline, DeadlineRunner, schedule_deadline
from app.timers.runner import MAX_ATTEMPTS, retry_failed_deadlines
from ledger import Ledger
from ledger.reconcile import reconcile
from tests.conftest import _with_database, make_settings
from tests.helpers import DEFAULT_PASSWORD, auth, login
from tests.integration.compliance.helpers import sign_rounds
from tests.integration.tables.helpers import (
    FAST_TIMERS,
    balance,
    create_table,
    operator,
    play_to_the_end,
    player,
    view,
)

SERVICE_ROLE = "raiz_service"
SCHEMAS = ("game", "ledger", "rng")
APPEND_ONLY = (
    "game.rounds",
    "game.round_log",
    "game.round_results",
    "game.signing_keys",
    "game.round_signatures",
    "game.merkle_leaves",
    "game.merkle_nodes",
    "game.checkpoints",
    "game.access_log",
    "game.audit_sweeps",
    "game.fee_rates",
    "game.table_actions",
    "game.account_suspensions",
    "game.entry_limit_changes",
    "ledger.transfers",
    "ledger.entries",
    "ledger.settlements",
    "rng.rounds",
    "rng.client_seeds",
    "rng.drawn_streams",
    "rng.reveals",
    "rng.fixed_streams",
)


ROLE_PREFIX = f"raiz_t_app_{os.getpid()}_"
"""This session's login roles (role names are cluster-wide)."""


async def _drop_role(admin: asyncpg.Connection, role: str) -> None:
    await admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role
    )
    await admin.execute(f'DROP ROLE IF EXISTS "{role}"')


@pytest.fixture(scope="module", autouse=True)
def _no_role_left(pg_server_url: str) -> Iterator[None]:
    """After this file, none of this session's login roles is left in the cluster, whatever
    became of a test's own clean-up."""
    yield

    async def sweep() -> None:
        admin = await asyncpg.connect(_with_database(pg_server_url, "postgres"))
        try:
            query = "SELECT rolname::text FROM pg_roles WHERE starts_with(rolname, $1)"
            for row in await admin.fetch(query, ROLE_PREFIX):
                await _drop_role(admin, row[0])
        finally:
            await admin.close()

    asyncio.run(sweep())


@contextlib.asynccontextmanager
async def _login_role(server_url: str) -> AsyncIterator[str]:
    """A fresh login role in the ``raiz_service`` group (cluster-wide: dropped afterwards,
    also when the test fails: ``async with``, not a generator left to the collector)."""
    role = f"{ROLE_PREFIX}{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(server_url)
    try:
        await admin.execute(f'CREATE ROLE "{role}" LOGIN IN ROLE {SERVICE_ROLE}')
    finally:
        await admin.close()
    try:
        yield role
    finally:
        admin = await asyncpg.connect(server_url)
        try:
            await _drop_role(admin, role)
        finally:
            await admin.close()


def _as(url: str, role: str) -> str:
    return make_url(url).set(username=role, password=None).render_as_string(hide_password=False)


@pytest.fixture
async def service_url(database_url: str) -> AsyncIterator[str]:
    """This test's database, reached as a login role of the serving group."""
    async with _login_role(database_url) as role:
        yield _as(database_url, role)


@pytest.fixture
def service_settings(service_url: str) -> Settings:
    return make_settings(
        service_url,
        allow_timer_overrides=True,
        presence_grace_s=3600,
        scheduler_poll_interval_s=0.05,
    )


async def test_the_serving_role_plays_a_match_and_audits_it(service_settings, service_url):
    from litestar.testing import AsyncTestClient

    from app.main import create_app

    settings = service_settings
    async with AsyncTestClient(app=create_app(settings)) as client:
        op = await operator(client, settings)
        players = [await player(client, settings, f"player{i}", 1_000, op) for i in range(4)]
        # a failed login is recorded, a good one deletes the failures
        response = await client.post(
            "/auth/login", json={"username": "player0", "password": "not the password"}
        )
        assert response.status_code == 401, response.text
        table = await create_table(client, players[0][1], options={"lives": 2, **FAST_TIMERS})
        for _, token in players:
            response = await client.post(f"/tables/{table['id']}/seat", headers=auth(token))
            assert response.status_code == 201, response.text
        final = await play_to_the_end(client, table["id"], [token for _, token in players])
        balances = {user_id: await balance(client, token) for user_id, token in players}
        assert sorted(balances.values()) == [500, 500, 500, 2_300]
        assert balances[final["result"]["winner_user_id"]] == 2_300
        rounds = await client.get("/players/me/hands", headers=auth(players[0][1]))
        assert rounds.status_code == 200, rounds.text

    database = Database.connect(service_url, settings)
    try:
        report = await reconcile(database.engine)
        assert report.problems == []
        audit = await verify_all(database, settings)
        assert audit.failures == []
        async with database.session() as session:
            _, created = await make_checkpoint(session, settings, origin="test")
            await session.commit()
        assert created
        sweep = await AuditMonitor(
            database, settings.model_copy(update={"audit_settle_s": 0})
        ).run()
        assert sweep is not None and sweep.ok
    finally:
        await database.dispose()


async def test_the_serving_role_leaves_cancels_times_out_and_logs_out(
    service_settings, service_url, database_url
):
    """The flows the match does not take, with UPDATE on the columns the code changes only
    (migration ``game_0008``): a leave and a cancellation refund (a seat's leaving time and
    refund transfer), the fill deadline cancels a table, a logout revokes a token, a failing
    deadline waits and is parked, then re-queued; the guard triggers refuse the serving role
    a change of what is written once."""
    from litestar.testing import AsyncTestClient

    from app.main import create_app

    settings = service_settings
    async with AsyncTestClient(app=create_app(settings)) as client:
        op = await operator(client, settings)
        players = [await player(client, settings, f"player{i}", 1_000, op) for i in range(3)]
        tokens = [token for _, token in players]
        table = await create_table(client, tokens[0], seat_count=3)
        for token, step in ((tokens[0], "seat"), (tokens[0], "leave"), (tokens[0], "seat")):
            response = await client.post(f"/tables/{table['id']}/{step}", headers=auth(token))
            assert response.status_code in (200, 201), response.text
        response = await client.post(f"/tables/{table['id']}/seat", headers=auth(tokens[1]))
        assert response.status_code == 201, response.text
        response = await client.post(f"/tables/{table['id']}/cancel", headers=auth(tokens[0]))
        assert response.status_code == 200 and response.json()["status"] == "cancelled"
        # the fill deadline: the owner brings it forward, the service's timer cancels
        late = await create_table(client, tokens[2], seat_count=3, fill_deadline_s=10)
        response = await client.post(f"/tables/{late['id']}/seat", headers=auth(tokens[2]))
        assert response.status_code == 201, response.text
        owner = await asyncpg.connect(database_url)
        try:
            await owner.execute(
                "UPDATE game.deadlines SET due_at = now() - interval '1 second' "
                "WHERE table_id = $1 AND kind = 'fill'",
                uuid.UUID(late["id"]),
            )
        finally:
            await owner.close()
        for _ in range(200):
            if (await view(client, tokens[2], late["id"]))["status"] == "cancelled":
                break
            await asyncio.sleep(0.05)
        assert (await view(client, tokens[2], late["id"]))["result"] == {"reason": "fill_deadline"}
        assert [await balance(client, token) for token in tokens] == [1_000] * 3
        # entry limits: a new one (insert), a loosening and a tightening (updates), enforced
        for cents in (800, 900, 500):
            response = await client.put(
                "/players/me/limits/day", json={"cents": cents}, headers=auth(tokens[0])
            )
            assert response.status_code == 200, response.text
        limited = await create_table(client, tokens[1], seat_count=3, entry_cents=600)
        response = await client.post(f"/tables/{limited['id']}/seat", headers=auth(tokens[0]))
        assert response.status_code == 409 and response.json()["code"] == "entry_limit_reached"
        again = await login(client, "player2")
        assert (await client.post("/auth/logout", headers=auth(again))).status_code == 204
        assert (await client.get("/wallet", headers=auth(again))).status_code == 401
        # a login from a known device renews it (game_0021)
        first = await client.post(
            "/auth/login", json={"username": "player2", "password": DEFAULT_PASSWORD}
        )
        device = first.json()["device_token"]
        renewed = await client.post(
            "/auth/login",
            json={"username": "player2", "password": DEFAULT_PASSWORD, "device_token": device},
        )
        assert renewed.status_code == 200 and renewed.json()["device_token"] is None, renewed.text

    database = Database.connect(service_url, settings)
    try:

        async def boom(session, deadline):
            raise RuntimeError("boom")

        async with database.session() as session:
            schedule_deadline(session, uuid.uuid4(), "boom", "t", utcnow())
            await session.commit()
        runner = DeadlineRunner(database, {"boom": boom})
        for _ in range(MAX_ATTEMPTS):
            async with database.session() as session:
                await session.execute(
                    update(Deadline).where(Deadline.kind == "boom").values(retry_at=None)
                )
                await session.commit()
            assert await runner.run_due(limit=1) == 1
        async with database.session() as session:
            assert len(await retry_failed_deadlines(session, None)) == 1
            await session.commit()
        report = await reconcile(database.engine)
        assert report.problems == []
    finally:
        await database.dispose()
    connection = await asyncpg.connect(service_url)
    try:
        for statement in (
            "UPDATE game.seats SET refund_transfer_id = 'x' WHERE refund_transfer_id IS NOT NULL",
            "UPDATE game.seats SET left_at = NULL WHERE left_at IS NOT NULL",
            "UPDATE game.seats SET entry_transfer_id = NULL WHERE entry_transfer_id IS NOT NULL",
            "UPDATE game.access_tokens SET revoked_at = NULL WHERE revoked_at IS NOT NULL",
        ):
            with pytest.raises(asyncpg.RaiseError, match="is set once"):
                await connection.execute(statement)
    finally:
        await connection.close()


async def test_the_serving_role_may_update_exactly_the_columns_the_code_updates(service_url):
    """Every column of a mutable game table: an UPDATE of one the code changes is allowed, of
    any other refused for want of the privilege, before any row is read."""
    connection = await asyncpg.connect(service_url)
    try:
        for table, granted in GAME_UPDATED_COLUMNS.items():
            columns = await connection.fetch(
                "SELECT attname::text FROM pg_attribute WHERE attrelid = $1::regclass "
                "AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                table,
            )
            for (column,) in columns:
                statement = f"UPDATE {table} SET {column} = {column} WHERE false"
                if column in granted:
                    assert await connection.execute(statement) == "UPDATE 0"
                    continue
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await connection.execute(statement)
    finally:
        await connection.close()


async def test_game_0008_downgrades_to_table_wide_update_and_back(database_url):
    """The downgrade gives the serving role back UPDATE on the whole of each mutable game
    table and drops the guard triggers; upgrading again restores both."""
    from alembic import command

    from app.db.migrate import alembic_config

    later = {"game.entry_limits", "game.login_devices"}  # created after game_0008
    tables = [table for table in GAME_UPDATED_COLUMNS if table not in later]

    async def state() -> tuple[list[bool], list[str]]:
        connection = await asyncpg.connect(database_url)
        try:
            wide = [
                await connection.fetchval(
                    "SELECT has_table_privilege($1, $2, 'UPDATE')", SERVICE_ROLE, table
                )
                for table in tables
            ]
            triggers = await connection.fetch(
                "SELECT tgname::text FROM pg_trigger WHERE tgname LIKE '%\\_guard\\_update' "
                "AND tgrelid::regclass::text LIKE 'game.%' ORDER BY 1"
            )
            return wide, [row[0] for row in triggers]
        finally:
            await connection.close()

    guards = sorted(f"{name.removeprefix('game.')}_guard_update" for name in GAME_UPDATED_COLUMNS)
    assert await state() == ([False] * len(tables), guards)
    config = alembic_config(database_url)
    await anyio.to_thread.run_sync(command.downgrade, config, "game_0007")
    assert await state() == ([True] * len(tables), [])
    await anyio.to_thread.run_sync(command.upgrade, config, "heads")
    assert await state() == ([False] * len(tables), guards)


ACCOUNT_IDENTITY_CHANGES = (
    "id = gen_random_uuid()",
    "type = 'prize_fund'",
    "currency = 'USD'",
    "owner_id = gen_random_uuid()",
    "may_go_negative = NOT may_go_negative",
    "created_at = now()",
    "balance_cents = balance_cents + 1, version = version + 1, currency = currency",
)
ACCOUNT_UPDATED_COLUMNS = ["balance_cents", "closed_at", "closed_version", "version"]
"""What the ledger updates (posting: balance and version; closing an escrow: the rest)."""
GAME_UPDATED_COLUMNS = {
    "game.tables": [
        "ended_at",
        "frozen_at",
        "frozen_keeper_seat",
        "last_events",
        "match_state",
        "result",
        "round_number",
        "started_at",
        "status",
        "step",
        "timer_due_at",
        "timer_kind",
    ],
    "game.seats": ["engine_seat", "entry_transfer_id", "left_at", "refund_transfer_id"],
    "game.users": ["password_hash", "suspended_at", "suspended_until"],
    "game.access_tokens": ["revoked_at"],
    "game.presence": ["acted_at", "last_seen_at", "timeouts_in_a_row"],
    "game.deadlines": ["attempts", "handled_at", "retry_at", "status"],
    "game.entry_limits": ["limit_cents", "pending_applies_at", "pending_cents", "updated_at"],
    "game.login_devices": ["expires_at"],
}
"""What the game service updates of its mutable tables (migrations ``game_0008``,
``game_0010``, ``game_0012``, ``game_0017``, ``game_0020``, ``game_0021``): a match's live
state, a seat's match seat, transfers and leaving, a user's password hash and suspension, a
token's revocation, presence, a deadline's handling, a player's entry limit and a known
device's renewal; never a table's entry, fee snapshot or options, nor a seat's owner, nor a
user's role, nor a device's owner or token."""

DELETED_ONLY = {"game.login_failures"}
"""Inserted and deleted, never updated: failed logins (a success clears them, old ones go)."""

UPDATED_AND_DELETED = {"game.login_devices"}
"""Mutable tables whose rows are deleted too: known devices (a login renews one, ``game_0021``;
expired and forgotten ones go, ``game_0018``)."""

QUEUES = ("game.pending_leaves",)
"""Not append-only, not updated: rows deleted once done with, under a guard trigger
(``compliance_0006``: the signed rounds a checkpoint has not appended yet)."""

REFUSED = [
    *(f"DROP TABLE {table}" for table in APPEND_ONLY),
    *(f"ALTER TABLE {table} DISABLE TRIGGER ALL" for table in APPEND_ONLY),
    *(f"ALTER TABLE {table} DISABLE TRIGGER USER" for table in APPEND_ONLY),
    *(f"TRUNCATE {table}" for table in APPEND_ONLY),
    *(f"DELETE FROM {table}" for table in APPEND_ONLY),
    *(f"ALTER TABLE {table} OWNER TO CURRENT_USER" for table in APPEND_ONLY),
    "ALTER TABLE ledger.entries DISABLE TRIGGER entries_append_only",
    "DROP TRIGGER entries_append_only ON ledger.entries",
    "DROP TRIGGER transfers_no_truncate ON ledger.transfers",
    "DROP TRIGGER round_log_append_only ON game.round_log",
    "DROP FUNCTION ledger.refuse_change() CASCADE",
    "CREATE OR REPLACE FUNCTION ledger.refuse_change() RETURNS trigger LANGUAGE plpgsql "
    "AS $$ BEGIN RETURN OLD; END $$",
    "ALTER FUNCTION game.refuse_change() RENAME TO gone",
    "DROP SCHEMA ledger CASCADE",
    "CREATE TABLE game.mine (id int)",
    "CREATE RULE keep AS ON DELETE TO ledger.entries DO INSTEAD NOTHING",
    "UPDATE ledger.entries SET amount_cents = 0",
    "UPDATE rng.reveals SET seed = seed",
    "UPDATE game.round_log SET body = body",
    "UPDATE rng.rounds SET sealed_seed = sealed_seed",
    "DELETE FROM ledger.accounts",
    "TRUNCATE ledger.accounts, game.tables, game.users",
    "DELETE FROM game.users",
    "DELETE FROM game.tables",
    "DELETE FROM game.deadlines",
    "UPDATE game.fee_rates SET fee_bps = 0",
    # a table's money and a seat's owner are fixed (game_0008: grant and trigger)
    "UPDATE game.tables SET entry_cents = 0",
    "UPDATE game.tables SET fee_bps = 0",
    "UPDATE game.tables SET fee_rate_id = fee_rate_id",
    "UPDATE game.tables SET currency = 'USD'",
    "UPDATE game.tables SET options = '{}'",
    "UPDATE game.tables SET seat_count = 2",
    "UPDATE game.tables SET created_at = now()",
    "UPDATE game.tables SET fill_deadline_at = now()",
    "UPDATE game.seats SET user_id = gen_random_uuid()",
    "UPDATE game.seats SET table_id = gen_random_uuid()",
    "UPDATE game.seats SET position = 0",
    "UPDATE game.seats SET entry_cents = 0",  # what the limits sum (game_0022)
    "UPDATE game.users SET role = 'operator'",
    "UPDATE game.account_suspensions SET action = 'reinstate'",
    "UPDATE game.entry_limit_changes SET cents = NULL",
    "UPDATE game.entry_limit_changes SET applies_at = requested_at",
    "DELETE FROM game.entry_limits",
    "UPDATE game.entry_limits SET user_id = gen_random_uuid()",
    "UPDATE game.entry_limits SET period = 'week'",
    "UPDATE game.login_devices SET user_id = gen_random_uuid()",
    "UPDATE game.login_devices SET token_sha256 = token_sha256 || '\\x00'::bytea",
    "UPDATE game.login_devices SET created_at = now()",
    "UPDATE game.access_tokens SET user_id = gen_random_uuid()",
    "UPDATE game.access_tokens SET expires_at = now() + interval '1 year'",
    "UPDATE game.deadlines SET due_at = now()",
    "UPDATE game.deadlines SET token = ''",
    "UPDATE game.presence SET user_id = gen_random_uuid()",
    "UPDATE game.table_actions SET step = 0",
    # an account's balance, version and closing only: never its identity
    *(f"UPDATE ledger.accounts SET {change}" for change in ACCOUNT_IDENTITY_CHANGES),
    "SET session_replication_role = replica",
    "DROP TABLE public.alembic_version",
    "DELETE FROM public.alembic_version",
]


async def test_the_serving_role_cannot_undo_retention(service_url, database_url):
    connection = await asyncpg.connect(service_url)
    try:
        refused = []
        for statement in REFUSED:
            transaction = connection.transaction()
            await transaction.start()
            try:
                await connection.execute(statement)
            except asyncpg.InsufficientPrivilegeError:
                refused.append(statement)
            finally:
                await transaction.rollback()  # nothing a statement did is kept
        assert set(refused) == set(REFUSED), sorted(set(REFUSED) - set(refused))
        # what it does need still works
        assert await connection.fetchval("SELECT count(*) FROM ledger.accounts") == 4
    finally:
        await connection.close()
    # ... which is exactly what the schemas' owner (the role migrations ran as) can do
    owner = await asyncpg.connect(database_url)
    try:
        transaction = owner.transaction()
        await transaction.start()
        await owner.execute("ALTER TABLE ledger.entries DISABLE TRIGGER ALL")
        await owner.execute("DROP TABLE game.round_log")
        await transaction.rollback()
    finally:
        await owner.close()


async def test_the_serving_role_takes_a_round_out_of_the_checkpoint_queue_only_as_a_leaf(
    service_url, database_url, service_settings
):
    """Its signatures queue themselves (the trigger runs as the signing role); it may delete
    a queued round only once a checkpoint has made it a leaf, and never update one."""
    await sign_rounds(database_url, 1, 3)
    connection = await asyncpg.connect(service_url)
    try:
        with pytest.raises(asyncpg.RaiseError, match="it is not a Merkle leaf yet"):
            await connection.execute("DELETE FROM game.pending_leaves")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await connection.execute("UPDATE game.pending_leaves SET round_id = round_id")
        assert await connection.fetchval("SELECT count(*) FROM game.pending_leaves") == 3
    finally:
        await connection.close()
    database = Database.connect(service_url, service_settings)
    try:
        async with database.session() as session:
            checkpoint, _ = await make_checkpoint(session, service_settings, origin="test")
            await session.commit()
    finally:
        await database.dispose()
    assert checkpoint.tree_size == 3
    connection = await asyncpg.connect(service_url)
    try:
        assert await connection.fetchval("SELECT count(*) FROM game.pending_leaves") == 0
    finally:
        await connection.close()


async def test_the_serving_role_posts_and_closes_accounts_but_cannot_rewrite_one(service_url):
    """Every ledger operation works with UPDATE on an account's balance, version and closing
    columns only (migration ``ledger_0004``); its identity columns are refused by the grant."""
    ana, bia, table = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    database = Database.connect(service_url, make_settings(service_url))

    async def run(work):  # one operation per transaction, as the game service does
        async with database.session() as session, session.begin():
            return await work(Ledger(session))

    try:
        for who in (ana, bia):
            await run(lambda ledger, p=who: ledger.deposit(f"dep:{p}", p, 1_000))
            await run(lambda ledger, p=who: ledger.take_entry(f"entry:{p}", p, table, 500))
        await run(lambda ledger: ledger.settle_table("settle", table, 1_000, [ana]))
        escrow = await run(lambda ledger: ledger.close_escrow(table))
        assert escrow.closed and escrow.balance_cents == 0
        await run(lambda ledger: ledger.withdraw("out", ana, 300))
        await run(lambda ledger: ledger.reverse("out:back", "out"))
        wallet = await run(lambda ledger: ledger.account(ledger.wallet_id(ana)))
        assert (wallet.balance_cents, wallet.version) == (1_000 - 500 + 900, 5)
        report = await reconcile(database.engine)
        assert report.ok, report.problems
    finally:
        await database.dispose()
    connection = await asyncpg.connect(service_url)
    try:
        for change in ACCOUNT_IDENTITY_CHANGES:
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await connection.execute(
                    f"UPDATE ledger.accounts SET {change} WHERE id = $1", escrow.id
                )
        row = await connection.fetchrow("SELECT * FROM ledger.accounts WHERE id = $1", escrow.id)
        assert (row["type"], row["currency"], row["owner_id"]) == ("table_escrow", "BRL", table)
        assert (row["created_at"], row["closed_at"]) == (escrow.created_at, escrow.closed_at)
    finally:
        await connection.close()


async def test_every_table_is_granted_no_more_than_the_code_needs(database_url):
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch(
            """
            SELECT c.oid::regclass::text AS name, pg_get_userbyid(c.relowner) AS owner,
                   EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = c.oid
                           AND t.tgname LIKE '%\\_append\\_only') AS append_only,
                   has_table_privilege($1, c.oid, 'SELECT') AS can_select,
                   has_table_privilege($1, c.oid, 'INSERT') AS can_insert,
                   has_table_privilege($1, c.oid, 'UPDATE') AS can_update,
                   has_table_privilege($1, c.oid, 'DELETE') AS can_delete,
                   has_table_privilege($1, c.oid, 'TRUNCATE') AS can_truncate,
                   has_table_privilege($1, c.oid, 'REFERENCES') AS can_reference,
                   has_table_privilege($1, c.oid, 'TRIGGER') AS can_trigger,
                   pg_has_role($1, c.relowner, 'USAGE') AS owns
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = ANY($2) AND c.relkind IN ('r', 'p')
            ORDER BY 1
            """,
            SERVICE_ROLE,
            list(SCHEMAS),
        )
        tables = {row["name"]: row for row in rows}
        assert {row["name"] for row in rows if row["append_only"]} == set(APPEND_ONLY)
        for name, row in tables.items():
            assert row["can_select"] and row["can_insert"], name
            assert not (row["can_truncate"] or row["can_reference"] or row["can_trigger"]), name
            assert not row["owns"], name
            if row["append_only"]:
                assert not (row["can_update"] or row["can_delete"]), name
        deletable = {name for name, row in tables.items() if row["can_delete"]}
        assert deletable == {*DELETED_ONLY, *QUEUES, *UPDATED_AND_DELETED}
        for name in QUEUES:  # a round leaves the queue, as a leaf: never rewritten
            assert not tables[name]["can_update"], name
        # the ledger's accounts: UPDATE on the columns it changes only (migration ledger_0004)
        assert not tables["ledger.accounts"]["can_update"]
        updatable = await connection.fetchval(
            "SELECT array_agg(attname::text ORDER BY attname) FROM pg_attribute "
            "WHERE attrelid = 'ledger.accounts'::regclass AND attnum > 0 AND NOT attisdropped "
            "AND has_column_privilege($1, attrelid, attnum, 'UPDATE')",
            SERVICE_ROLE,
        )
        assert updatable == ACCOUNT_UPDATED_COLUMNS
        # the mutable game tables: UPDATE on the columns the code changes only (game_0008)
        for name, columns in GAME_UPDATED_COLUMNS.items():
            assert not tables[name]["can_update"], name
            updatable = await connection.fetchval(
                "SELECT coalesce(array_agg(attname::text ORDER BY attname), '{}') "
                "FROM pg_attribute WHERE attrelid = $2::regclass AND attnum > 0 "
                "AND NOT attisdropped AND has_column_privilege($1, attrelid, attnum, 'UPDATE')",
                SERVICE_ROLE,
                name,
            )
            assert updatable == columns, name
        mutable = {
            name
            for name, row in tables.items()
            if not row["append_only"]
            and name.startswith("game.")
            and name not in {*DELETED_ONLY, *QUEUES}
        }
        assert mutable == set(GAME_UPDATED_COLUMNS)
        # SELECT ... FOR UPDATE on rng.rounds needs UPDATE on a column (the trigger refuses it)
        assert await connection.fetchval(
            "SELECT array_agg(attname::text ORDER BY attname) FROM pg_attribute "
            "WHERE attrelid = 'rng.rounds'::regclass AND attnum > 0 AND NOT attisdropped "
            "AND has_column_privilege($1, attrelid, attnum, 'UPDATE')",
            SERVICE_ROLE,
        ) == ["id"]
        sequences = await connection.fetch(
            "SELECT c.oid::regclass::text AS name, has_sequence_privilege($1, c.oid, 'USAGE') "
            "AS usable FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = ANY($2) AND c.relkind = 'S'",
            SERVICE_ROLE,
            list(SCHEMAS),
        )
        assert sequences and all(row["usable"] for row in sequences), sequences
        for schema in SCHEMAS:
            assert await connection.fetchval(
                "SELECT has_schema_privilege($1, $2, 'USAGE') "
                "AND NOT has_schema_privilege($1, $2, 'CREATE')",
                SERVICE_ROLE,
                schema,
            ), schema
        attributes = await connection.fetchrow(
            "SELECT rolcanlogin, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls "
            "FROM pg_roles WHERE rolname = $1",
            SERVICE_ROLE,
        )
        assert not any(attributes.values()), attributes
    finally:
        await connection.close()


async def test_a_table_a_later_migration_creates_is_granted_too(database_url, service_url):
    """Default privileges: a table created later by the migrating role is usable at once."""
    owner = await asyncpg.connect(database_url)
    try:
        await owner.execute("CREATE TABLE ledger.later (id bigserial PRIMARY KEY, note text)")
    finally:
        await owner.close()
    connection = await asyncpg.connect(service_url)
    try:
        await connection.execute("INSERT INTO ledger.later (note) VALUES ('x')")
        assert await connection.fetchval("SELECT note FROM ledger.later") == "x"
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await connection.execute("TRUNCATE ledger.later")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await connection.execute("DROP TABLE ledger.later")
    finally:
        await connection.close()


# -- two URLs: migrations as the owner, serving as the service role --------------------------


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RAIZ_PASSWORD_COST_LOG2", "10")
    monkeypatch.delenv("RAIZ_MIGRATION_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    yield CliRunner()
    get_settings.cache_clear()


async def test_db_upgrade_runs_as_the_migration_role_and_the_service_role_serves(
    runner, monkeypatch, empty_database
):
    async with _login_role(empty_database) as role:
        service = _as(empty_database, role)
        monkeypatch.setenv("DATABASE_URL", service)
        # the serving role cannot migrate: one line, exit 3, what to do
        result = await anyio.to_thread.run_sync(runner.invoke, main, ["db", "upgrade"])
        assert result.exit_code == EXIT_CANNOT_RUN, result.output
        assert isinstance(result.exception, SystemExit), result.exception
        line = result.output.strip()
        assert line.startswith(f"error: database: permission denied (postgresql://{role}@"), line
        assert "RAIZ_MIGRATION_DATABASE_URL" in line and "\n" not in line
        get_settings.cache_clear()
        monkeypatch.setenv("RAIZ_MIGRATION_DATABASE_URL", empty_database)
        result = await anyio.to_thread.run_sync(runner.invoke, main, ["db", "upgrade"])
        assert result.exit_code == 0, result.output
        get_settings.cache_clear()
        owner = await asyncpg.connect(empty_database)
        try:
            owners = await owner.fetch(
                "SELECT DISTINCT pg_get_userbyid(relowner) AS owner FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'ledger'"
            )
            assert [row["owner"] for row in owners] == [make_url(empty_database).username]
        finally:
            await owner.close()
        # the service role serves commands on the migrated database
        monkeypatch.delenv("RAIZ_MIGRATION_DATABASE_URL")
        for command in (
            ["users", "create", "--username", "boss", "--role", "operator", "--password", "x" * 12],
            ["ledger", "reconcile"],
            ["audit", "checkpoint"],
            ["db", "upgrade"],  # nothing pending: reads the version only
        ):
            result = await anyio.to_thread.run_sync(runner.invoke, main, command)
            assert result.exit_code == 0, (command, result.output)
            get_settings.cache_clear()


def test_a_migration_url_needs_a_database_url():
    with pytest.raises(ConfigurationError, match="RAIZ_MIGRATION_DATABASE_URL is set without"):
        Settings(database_url=None, migration_database_url="postgresql://raiz@db/raiz")


def test_an_unusable_migration_url_is_named_without_its_password():
    with pytest.raises(ConfigurationError) as refused:
        Settings(
            database_url="postgresql://app@db/raiz",
            migration_database_url="mysql://owner:hunter2@db/raiz",
        )
    assert "RAIZ_MIGRATION_DATABASE_URL is unusable" in str(refused.value)
    assert "hunter2" not in str(refused.value)


async def test_a_role_that_could_undo_retention_is_named(database_url, service_url):
    """What ``raiz serve`` refuses in production: DATABASE_URL's role is a superuser or owns
    our tables; a member of raiz_service passes."""
    from app.db.roles import serving_role_problem

    async def problem(url: str) -> str | None:
        database = Database.connect(url, make_settings(url))
        try:
            return await serving_role_problem(database)
        finally:
            await database.dispose()

    assert await problem(service_url) is None
    assert (await problem(database_url) or "").endswith("is a superuser")
    owner = make_url(service_url).username
    admin = await asyncpg.connect(database_url)
    try:
        await admin.execute(f'ALTER TABLE game.presence OWNER TO "{owner}"')
        try:
            assert (
                await problem(service_url)
                == f"DATABASE_URL's role {owner} owns 1 tables of the service"
            )
        finally:
            await admin.execute("ALTER TABLE game.presence OWNER TO CURRENT_USER")
    finally:
        await admin.close()


PRODUCTION_ENV = {
    "RAIZ_ENV": "production",
    "RAIZ_SEED_KEYRING": "k2:" + "A" * 43 + "=",
    "RAIZ_SIGNING_KEYRING": "k2:" + "B" * 43 + "=",
    "RAIZ_PAYMENT_WEBHOOK_SECRET": "a-real-secret-from-the-vault",
}


@pytest.mark.parametrize("role", ["superuser", "service"])
def test_raiz_serve_in_production_refuses_a_role_that_could_undo_retention(
    monkeypatch, database_url, service_url, role
):
    """As the cluster's superuser, production ``raiz serve`` stops before serving: one line,
    exit 3; as a member of raiz_service it goes on to serve."""
    import uvicorn

    served: list[str] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **_: served.append(app))
    url = database_url if role == "superuser" else service_url
    for variable, value in {**PRODUCTION_ENV, "DATABASE_URL": url}.items():
        monkeypatch.setenv(variable, value)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(main, ["serve", "--no-migrate", "--workers", "1"])
    finally:
        get_settings.cache_clear()
    if role == "service":
        assert result.exit_code == 0, result.output
        assert served == ["app.main:create_app"]
        return
    assert result.exit_code == EXIT_CANNOT_RUN, result.output
    assert served == []
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: configuration: refusing to serve in production: ")
    assert "is a superuser" in lines[0] and "raiz_service" in lines[0]


async def test_raiz_serve_migrates_as_the_owner_and_serves_as_the_service_role(
    empty_database, tmp_path
):
    """``raiz serve --workers 2`` on an empty database with both URLs: its migration runs as
    the owner, its workers serve a whole match (HTTP, WebSockets, LISTEN, timers) as the
    service role."""
    from app.clients.bot_player import ActionStats
    from tests.integration.live.support import (
        FAST_TIMERS as LIVE_TIMERS,
    )
    from tests.integration.live.support import (
        LIVE_ENV,
        check_money,
        close_all,
        deposit,
        get_table,
        person,
        play_match,
        take_seat,
    )
    from tests.integration.live.support import (
        create_table as create_live_table,
    )
    from tests.live import live_server

    async with _login_role(empty_database) as role:
        service = _as(empty_database, role)
        env = {
            **LIVE_ENV,
            "RAIZ_DATA_DIR": str(tmp_path / "data"),
            "RAIZ_MIGRATION_DATABASE_URL": empty_database,
        }
        with live_server(service, workers=2, env=env) as base:
            operator = await person(service, base, "operator", "operator")
            players = [await person(service, base, f"player{i}") for i in range(4)]
            for who in players:
                await deposit(base, operator, who, 1_000)
            table = await create_live_table(base, players[0], options={"lives": 2, **LIVE_TIMERS})
            for who in players:
                await take_seat(base, table["id"], who)
            await play_match([base], table["id"], players, stats=ActionStats())
            final = await get_table(base, table["id"], operator)
            assert final["status"] == "finished"
            await check_money(base, final, players)
            await close_all([operator, *players])
            connection = await asyncpg.connect(empty_database)
            try:
                # every connection of the server is the service role's
                by_role = await connection.fetch(
                    "SELECT usename::text AS role, count(*) AS n FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name = 'raiz' "
                    "GROUP BY 1"
                )
                owners = await connection.fetch(
                    "SELECT DISTINCT pg_get_userbyid(relowner) AS owner FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname IN ('game', 'ledger', 'rng')"
                )
            finally:
                await connection.close()
        assert [row["role"] for row in by_role] == [role], by_role
        assert [row["owner"] for row in owners] == [make_url(empty_database).username]
