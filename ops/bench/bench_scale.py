"""The batch and periodic work at production scale: how long each read of the whole history takes.

Run from the repository root::

    python ops/bench/bench_scale.py [--database-url postgresql://postgres@127.0.0.1:5432/postgres]
        [--tables 300000] [--rounds-per-table 2] [--users 100000] [--pending 2000] [--keep]

Not a test: it prints figures and asserts nothing but a clean reconciliation.  It creates a
scratch database ``raiz_scale_<pid>`` (dropped at the end unless ``--keep``; ``--reuse NAME``
measures an existing one again), migrates it and fills it with ``INSERT ... SELECT
generate_series`` in a few minutes:

* ``--users`` players, each with one deposit;
* ``--tables`` finished four-seat tables, each with four entry fees, a house fee and a payout
  (a settlement, the escrow closed), ``--rounds-per-table`` finished and signed rounds (no round
  log: the bundles are small, what is measured is how the reads scale with the history);
* every round in the Merkle leaves and one checkpoint over them but the newest ``--pending``,
  which the next checkpoint appends (they alone are in its queue, ``game.pending_leaves``);
  an audit sweep an hour ago.

Then it times, with the service's own functions and statement timeout: each reconciliation
check, the audit sweep (a full reconciliation: its first), the next audit sweep after
``--new-deposits`` deposits (an incremental reconciliation), ``verify-all``'s reads (not the
verifier: ``bench_verify.py``), a checkpoint, an inclusion proof, the compliance round search,
a player's hand history and money history.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.config import Settings
from app.db import Database
from app.db.migrate import upgrade
from ledger.constants import ACCOUNT_NAMESPACE
from ops.bench.bench_ledger import admin, with_database

USER_NAMESPACE = "00000000-0000-0000-0000-00000000000a"
TABLE_NAMESPACE = "00000000-0000-0000-0000-00000000000b"
ROUND_NAMESPACE = "00000000-0000-0000-0000-00000000000c"

FILL = """
-- bulk load: no triggers, no foreign-key checks
SET session_replication_role = replica;
CREATE EXTENSION IF NOT EXISTS "uuid-ossp";
CREATE FUNCTION pg_temp.wallet(u bigint) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
  SELECT uuid_generate_v5('{account_ns}', 'player_wallet:BRL:' ||
                          uuid_generate_v5('{user_ns}', u::text)::text) $$;
CREATE FUNCTION pg_temp.escrow(t bigint) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
  SELECT uuid_generate_v5('{account_ns}', 'table_escrow:BRL:' ||
                          uuid_generate_v5('{table_ns}', t::text)::text) $$;
CREATE FUNCTION pg_temp.player(t bigint, k int) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT ((t * 4 + k) * {stride}) % {users} + 1 $$;

INSERT INTO game.users (id, username, password_hash, role, created_at)
SELECT uuid_generate_v5('{user_ns}', u::text), 'u' || u, 'x', 'player',
       timestamptz '2016-01-01' + u * interval '1 second'
FROM generate_series(1, {users}) u;

INSERT INTO game.tables (id, game, preset, options, seat_count, entry_cents, currency, fee_bps,
                         fee_rate_id, creator_id, status, fill_deadline_at, abandon_after_s,
                         created_at, started_at, ended_at, step, round_number, last_events,
                         result)
SELECT uuid_generate_v5('{table_ns}', t::text), 'cacheta', 'cacheta-raiz', '{{}}', 4, 500, 'BRL',
       1000, (SELECT min(id) FROM game.fee_rates),
       uuid_generate_v5('{user_ns}', pg_temp.player(t, 0)::text), 'finished',
       ts, 60, ts, ts, ts + interval '20 minutes', 0, {rounds}, '[]',
       '{{"reason": "won"}}'
FROM (SELECT t, now() - interval '10 years' + t * ({span_s} / {tables}.0) * interval '1 second'
             - interval '1 hour' AS ts
      FROM generate_series(1, {tables}) t) s;

INSERT INTO game.seats (table_id, user_id, position, engine_seat, entry_cents, entry_transfer_id,
                        seated_at)
SELECT uuid_generate_v5('{table_ns}', t::text),
       uuid_generate_v5('{user_ns}', pg_temp.player(t, k)::text), k, k, 500,
       'entry:' || t || ':' || k, now()
FROM generate_series(1, {tables}) t, generate_series(0, 3) k;

INSERT INTO game.rounds (id, table_id, number, rng_round_id, commitment, rng_version,
                         start_state, start_state_hash, created_at)
SELECT uuid_generate_v5('{round_ns}', t || ':' || n), tb.id, n,
       uuid_generate_v5('{round_ns}', 'rng:' || t || ':' || n),
       encode(sha256(('c' || t || ':' || n)::bytea), 'hex'), 'raiz-rng/1',
       '{{"decks": 2, "seats": 4}}', repeat('0', 64), tb.created_at + n * interval '5 minutes'
FROM generate_series(1, {tables}) t
JOIN game.tables tb ON tb.id = uuid_generate_v5('{table_ns}', t::text),
     generate_series(1, {rounds}) n;

INSERT INTO game.round_results (round_id, final_state_hash, last_hash, entries, summary,
                                ended_at)
SELECT id, repeat('0', 64), sha256(id::text::bytea), 0, '{{"result": "closed"}}',
       created_at + interval '4 minutes'
FROM game.rounds;

INSERT INTO game.signing_keys (key_id, algorithm, public_key, created_at)
VALUES ('scale', 'ed25519', sha256('scale'), timestamptz '2016-01-01');

INSERT INTO game.round_signatures (round_id, record, record_hash, key_id, signature, signed_at)
SELECT id, '{{}}', sha256(id::text::bytea), 'scale', sha512(id::text::bytea),
       created_at + interval '4 minutes'
FROM game.rounds;

INSERT INTO game.merkle_leaves (leaf_index, round_id, record_hash, added_at)
SELECT row_number() OVER (ORDER BY signed_at, round_id) - 1, round_id, record_hash, now()
FROM (SELECT * FROM game.round_signatures ORDER BY signed_at DESC, round_id DESC
      OFFSET {pending}) s;
-- the checkpoint queue (compliance_0006) keeps the rest, as the checkpoints would have left it
DELETE FROM game.pending_leaves p USING game.merkle_leaves l WHERE l.round_id = p.round_id;

INSERT INTO game.checkpoints (tree_size, root, key_id, signature, created_at, origin)
SELECT count(*), sha256('root'), 'scale', sha512('root'), now() - interval '1 day', 'scheduled'
FROM game.merkle_leaves;

INSERT INTO game.audit_sweeps (started_at, finished_at, worker, signed_after, signed_up_to,
                               rounds_verified, tables_failed, reconcile_problems, findings)
VALUES (now() - interval '1 hour', now() - interval '1 hour', 'bench', NULL,
        now() - interval '1 hour', 0, 0, 0, '[]');

-- the ledger: transfers in a global order, then each account's entries chained in it
CREATE TEMP TABLE plan AS
SELECT u AS seq, 'deposit:' || u AS id, 'deposit' AS kind,
       (SELECT id FROM ledger.accounts WHERE type = 'cash_in') AS debit,
       pg_temp.wallet(u) AS credit, 10000000::bigint AS amount,
       jsonb_build_object('note', 'funding') AS reference, timestamptz '2016-01-01' AS at
FROM generate_series(1, {users}) u
UNION ALL
SELECT {users} + t * 8 + k, 'entry:' || t || ':' || k, 'entry_fee',
       pg_temp.wallet(pg_temp.player(t, k)), pg_temp.escrow(t), 500,
       jsonb_build_object('table', uuid_generate_v5('{table_ns}', t::text), 'seat', k),
       now() - interval '10 years'
FROM generate_series(1, {tables}) t, generate_series(0, 3) k
UNION ALL
SELECT {users} + t * 8 + 4, 'settle:' || uuid_generate_v5('{table_ns}', t::text) || '/fee',
       'house_fee', pg_temp.escrow(t),
       (SELECT id FROM ledger.accounts WHERE type = 'house_revenue'),
       200, jsonb_build_object('table', uuid_generate_v5('{table_ns}', t::text)),
       now() - interval '10 years'
FROM generate_series(1, {tables}) t
UNION ALL
SELECT {users} + t * 8 + 5,
       'settle:' || uuid_generate_v5('{table_ns}', t::text) || '/payout/0', 'payout',
       pg_temp.escrow(t), pg_temp.wallet(pg_temp.player(t, 0)), 1800,
       jsonb_build_object('table', uuid_generate_v5('{table_ns}', t::text)),
       now() - interval '10 years'
FROM generate_series(1, {tables}) t;

INSERT INTO ledger.transfers (id, batch_id, batch_position, debit_account_id, credit_account_id,
                              amount_cents, currency, kind, reverses_id, reference, metadata,
                              request_sha256, created_at)
SELECT id, uuid_generate_v5('{round_ns}', 'batch:' || seq), 0, debit, credit, amount, 'BRL', kind,
       NULL, reference, '{{}}', sha256(id::bytea), at
FROM plan ORDER BY seq;

CREATE TEMP TABLE legs AS
SELECT id AS transfer_id, debit AS account_id, -amount AS amount, seq, at FROM plan
UNION ALL
SELECT id, credit, amount, seq, at FROM plan;

INSERT INTO ledger.entries (transfer_id, account_id, amount_cents, balance_before_cents,
                            balance_after_cents, account_version, created_at)
OVERRIDING SYSTEM VALUE
SELECT transfer_id, account_id, amount, after - amount, after, version, at
FROM (SELECT *, SUM(amount) OVER w AS after, row_number() OVER w AS version
      FROM legs WINDOW w AS (PARTITION BY account_id ORDER BY seq)) chained
ORDER BY seq, amount;

INSERT INTO ledger.accounts (id, type, currency, owner_id, may_go_negative, balance_cents,
                             version, created_at)
SELECT pg_temp.wallet(u), 'player_wallet', 'BRL', uuid_generate_v5('{user_ns}', u::text), false,
       0, 0, timestamptz '2016-01-01'
FROM generate_series(1, {users}) u;
INSERT INTO ledger.accounts (id, type, currency, owner_id, may_go_negative, balance_cents,
                             version, created_at)
SELECT pg_temp.escrow(t), 'table_escrow', 'BRL', uuid_generate_v5('{table_ns}', t::text), false,
       0, 0, now() - interval '10 years'
FROM generate_series(1, {tables}) t;
UPDATE ledger.accounts a SET balance_cents = s.balance, version = s.version
FROM (SELECT account_id, SUM(amount_cents) AS balance, MAX(account_version) AS version
      FROM ledger.entries GROUP BY account_id) s
WHERE s.account_id = a.id;
UPDATE ledger.accounts SET closed_at = now(), closed_version = version
WHERE type = 'table_escrow';

INSERT INTO ledger.settlements (id, table_id, escrow_account_id, fee_bps, pool_cents, fee_cents,
                                winners, payouts, reference, request_sha256, created_at)
SELECT 'settle:' || tid, tid, pg_temp.escrow(t), 1000, 2000, 200,
       jsonb_build_array(uuid_generate_v5('{user_ns}', pg_temp.player(t, 0)::text)::text),
       '[1800]', '{{}}', sha256(tid::text::bytea), now() - interval '10 years'
FROM (SELECT t, uuid_generate_v5('{table_ns}', t::text) AS tid
      FROM generate_series(1, {tables}) t) s;

SET session_replication_role = origin;
"""


SEATS = 4
"""Players per filled table."""
SEAT_STRIDE = 7919
"""A prime: seat k of table t is user ``(t * SEATS + k) * SEAT_STRIDE mod --users`` + 1."""


async def fill(url: str, args: argparse.Namespace) -> None:
    sql = FILL.format(
        account_ns=ACCOUNT_NAMESPACE,
        user_ns=USER_NAMESPACE,
        table_ns=TABLE_NAMESPACE,
        round_ns=ROUND_NAMESPACE,
        users=args.users,
        stride=SEAT_STRIDE,
        tables=args.tables,
        rounds=args.rounds_per_table,
        pending=args.pending,
        span_s=10 * 365 * 86400,
    )
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("SET statement_timeout = 0")
        for statement in sql.split(";\n"):
            if statement.strip():
                began = time.perf_counter()
                await connection.execute(statement)
                first = next(line for line in statement.strip().splitlines())
                print(f"  {time.perf_counter() - began:7.1f} s  {first[:80]}")
        await connection.execute("VACUUM ANALYZE")
        sizes = await connection.fetch(
            "SELECT relname, n_live_tup FROM pg_stat_user_tables WHERE n_live_tup > 1000"
            " ORDER BY n_live_tup DESC"
        )
        print("  rows: " + ", ".join(f"{row[0]} {row[1]:,}" for row in sizes))
    finally:
        await connection.close()


async def timed(label: str, work: Callable[[], Awaitable[Any]]) -> Any:
    began = time.perf_counter()
    try:
        result = await work()
    except Exception as error:  # a figure, not a test: say what failed and go on
        print(
            f"  {label:<58} FAILED after {(time.perf_counter() - began) * 1000:,.0f} ms: "
            f"{type(error).__name__}: {str(error).splitlines()[0][:80]}"
        )
        return None
    print(f"  {label:<58} {(time.perf_counter() - began) * 1000:>10,.0f} ms")
    return result


async def measure(url: str, args: argparse.Namespace) -> None:
    from app.compliance.audit import _merkle_problems, finished_table_ids, pinned_keys, verify_all
    from app.compliance.checkpoints import inclusion_proofs, make_checkpoint
    from app.compliance.monitor import AuditMonitor
    from app.compliance.service import ComplianceService
    from app.rng_api import RngServices
    from ledger.checks import CHECKS, CURRENCY_SUM
    from ledger.reconcile import reconcile

    settings = Settings(database_url=url, db_statement_timeout_ms=args.statement_timeout_ms)
    database = Database.connect(url, settings)
    print(f"statement timeout {settings.db_statement_timeout_ms:,} ms")
    try:
        print("reconcile, check by check (each over the whole ledger in one statement):")
        async with database.engine.connect() as connection:
            for name, _, query, _ in (
                (CURRENCY_SUM[0], ("id",), CURRENCY_SUM[1], None),
                *CHECKS,
            ):
                whole = query.replace("{keys}", "TRUE").replace("{entry_keys}", "TRUE")

                async def check(query: str = whole) -> Any:
                    return (await connection.execute(text(query))).all()

                await timed(name, check)
        print("batch and periodic work:")
        await timed("raiz ledger reconcile", lambda: reconcile(database.engine))

        async def sweep() -> Any:
            return await AuditMonitor(database, settings).run()

        report = await timed("audit sweep (reconcile + new rounds)", sweep)
        if report is not None:
            print(
                f"    {report.rounds_verified} rounds verified, reconcile problems "
                f"{report.reconcile_problems}, {report.reconcile_kind} reconciliation of "
                f"{report.entries_checked:,} entries"
            )
        await new_deposits(database, args.new_deposits)
        eager = Settings(
            database_url=url,
            db_statement_timeout_ms=args.statement_timeout_ms,
            audit_interval_s=1e-3,
        )

        async def next_sweep() -> Any:
            return await AuditMonitor(database, eager).run()

        report = await timed(f"next audit sweep ({args.new_deposits} new deposits)", next_sweep)
        if report is not None:
            print(
                f"    reconcile problems {report.reconcile_problems}, {report.reconcile_kind} "
                f"reconciliation of {report.entries_checked:,} entries"
            )

        async def verify_all_reads() -> Any:
            async with database.session() as session:
                await session.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
                tables = await timed(
                    "  verify-all: finished_table_ids", lambda: finished_table_ids(session)
                )
                keys = await pinned_keys(session)
                await timed(
                    "  verify-all: merkle leaves and checkpoints",
                    lambda: _merkle_problems(session, keys),
                )
                await session.rollback()
                return tables

        await timed("verify-all reads (not the verifier)", verify_all_reads)
        rounds = await _one_round(database)
        user = uuid.uuid5(uuid.UUID(USER_NAMESPACE), "1")

        async def proofs() -> Any:
            async with database.session() as session:
                return await inclusion_proofs(session, [rounds])

        # the filled database has leaves but no stored tree (game.merkle_nodes), as a release
        # before compliance_0004 left it: the proof is computed from every leaf
        await timed("inclusion proof of one round, from the leaves", proofs)

        async def search(**filters: Any) -> Any:
            async with database.session() as session:
                service = ComplianceService(
                    session, settings, RngServices.from_settings(settings).for_session(session)
                )
                query = {
                    "player": None,
                    "table": None,
                    "since": None,
                    "until": None,
                    "limit": 50,
                    "offset": 0,
                }
                query.update(filters)
                return await service.search_rounds(**query)

        await timed("GET /compliance/rounds (newest 50)", search)
        await timed("GET /compliance/rounds?player=", lambda: search(player=user))
        await timed("GET /compliance/rounds?offset=100000", lambda: search(offset=100_000))
        deep = await search(offset=99_999, limit=1)
        if deep:
            await timed(
                "GET /compliance/rounds?before=<the 100,000th round>",
                lambda: search(before=uuid.UUID(deep[0]["round_id"])),
            )

        async def hands(offset: int = 0) -> Any:
            async with database.session() as session:
                service = ComplianceService(
                    session, settings, RngServices.from_settings(settings).for_session(session)
                )
                return await service.hand_history(user, limit=50, offset=offset)

        await timed("GET /players/me/hands?limit=50", hands)

        async def money() -> Any:
            async with database.session() as session:
                service = ComplianceService(
                    session, settings, RngServices.from_settings(settings).for_session(session)
                )
                return await service.money_history(user, limit=500, before_version=None)

        await timed("GET /compliance/players/{id}/money?limit=500", money)

        async with database.session() as session:
            # the first checkpoint stores the tree of every leaf; later ones only the new
            # leaves' subtrees (rolled back: --reuse measures the same database again)
            await timed(
                f"checkpoint ({args.pending} new leaves, storing the whole tree)",
                lambda: make_checkpoint(session, settings, origin="cli"),
            )
            await timed(
                "inclusion proof of one round, from the stored tree",
                lambda: inclusion_proofs(session, [rounds]),
            )
            await session.rollback()
        if args.verify_all:
            await timed("raiz audit verify-all", lambda: verify_all(database, settings))
    finally:
        await database.dispose()


async def new_deposits(database: Database, count: int) -> None:
    """``count`` deposits through the ledger, one transaction each (what the next sweep finds
    new: two entries each)."""
    from ledger import Ledger

    for number in range(count):
        async with database.session() as session, session.begin():
            user = uuid.uuid5(uuid.UUID(USER_NAMESPACE), str(number + 1))
            await Ledger(session).deposit(f"bench:{uuid.uuid4()}", user, 100)


async def _one_round(database: Database) -> uuid.UUID:
    """The round of the first Merkle leaf (inside the filled checkpoint unless all pend)."""
    async with database.session() as session:
        return (
            await session.execute(
                text("SELECT round_id FROM game.merkle_leaves ORDER BY leaf_index LIMIT 1")
            )
        ).scalar_one()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--tables", type=int, default=300_000)
    parser.add_argument("--rounds-per-table", type=int, default=2)
    parser.add_argument("--pending", type=int, default=2_000, help="rounds not yet in a checkpoint")
    parser.add_argument("--statement-timeout-ms", type=int, default=15_000)
    parser.add_argument(
        "--new-deposits", type=int, default=500, help="written before the second audit sweep"
    )
    parser.add_argument("--verify-all", action="store_true", help="also time raiz audit verify-all")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument("--reuse", help="measure this existing scratch database again")
    args = parser.parse_args()
    if min(args.tables, args.rounds_per_table) < 1 or args.pending < 0:
        parser.error("--tables and --rounds-per-table must be at least 1, --pending at least 0")
    if args.users < SEATS or args.users % SEAT_STRIDE == 0:
        # the four seats of a table are users (t * 4 + k) * SEAT_STRIDE mod --users: four
        # different users only when --users is at least 4 and prime to the stride
        parser.error(f"--users must be at least {SEATS} and not a multiple of {SEAT_STRIDE}")
    if args.pending >= args.tables * args.rounds_per_table:
        parser.error("--pending must be smaller than the number of rounds (tables x rounds)")
    name = args.reuse or f"raiz_scale_{os.getpid()}"
    url = with_database(args.database_url, name)
    try:
        if args.reuse is None:
            asyncio.run(admin(args.database_url, f'CREATE DATABASE "{name}"'))
            upgrade(url)
            print(
                f"filling {name}: {args.users:,} users, {args.tables:,} tables, "
                f"{args.tables * args.rounds_per_table:,} rounds"
            )
            asyncio.run(fill(url, args))
        asyncio.run(measure(url, args))
    finally:
        if not args.keep and args.reuse is None:
            asyncio.run(admin(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


if __name__ == "__main__":
    main()
