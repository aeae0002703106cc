"""Reconciliation: prove from the tables alone that every centavo is accounted for.

Runs in one REPEATABLE READ, read-only transaction, so it sees a single consistent
snapshot while transfers keep being written.  Checks:

- the balances of each currency sum to zero (double entry);
- each balance equals the sum of its entries, and the last entry's balance after;
- each account's versions are exactly 1..version and each entry starts from the
  previous entry's balance after (no gap, no rewrite);
- each transfer has exactly two entries: minus the amount on its debit account, plus
  the amount on its credit account, in the currency of both accounts;
- each transfer moves money between account types its kind allows (``KIND_ROUTES``), and
  each reversal or refund moves its original's amount back between its original's
  accounts (a refund's original being an entry fee);
- no account that may not go negative is negative, and each account's type allows what
  it declares;
- each closed escrow is zero and has no entry after it was closed;
- each settlement's fee is floor(pool * fee_bps / 10 000), fee + payouts = pool, and its
  fee and payout transfers carry exactly those amounts, from the table's escrow to the
  house revenue and to each winner's wallet in order.

:func:`reconcile` runs every check over the whole ledger (``raiz ledger reconcile``, and the
audit sweep's periodic full run).  :func:`sweep_reconcile` is the audit sweep's: a full run, or
an *incremental* one that checks only the entries written since the previous sweep's
high-water mark (``entries_up_to``) and what they touched, and returns the next mark.

The incremental run rests on one fact: transfers, entries and settlements are append-only
(triggers refuse UPDATE, DELETE and TRUNCATE; the account guard trigger refuses a version that
goes back and a balance change without a version change), so a row checked by an earlier sweep
is still the row it checked; what is new is the entries above the mark.  Check by check:

- ``currency_sum``, ``never_negative``, ``type_policy``, ``closed_escrow_empty``: read only
  ``ledger.accounts`` (mutable rows, no entry), so they still run over every account: one pass
  of the accounts table, no entry read;
- ``balance_chain`` and ``versions_contiguous``: each new entry starts from its predecessor's
  (same account, version - 1) balance after, and that predecessor exists (version 1 starts
  from 0): an index lookup per new entry; each touched account's version is its highest
  entry's.  With the chains checked up to the mark by earlier sweeps, the account's entries
  are 1..version with no gap and no rewrite (the unique (account, version) refuses a second
  entry of a version);
- ``last_entry_is_balance``: over the touched accounts (those of the new entries);
- ``balance_equals_entries``: not re-summed: a chain from 0 whose every entry adds its amount
  (``ck_entries_balance_arithmetic``) ends at the sum of the amounts, so the two checks
  above imply it;
- ``transfer_balanced``, ``transfer_currency``, ``transfer_route``, ``reversal_mirrors``: over
  the transfers of the new entries (both legs are read, through the (transfer, account) index);
- ``closed_escrow_no_later_entry``: over the new entries;
- ``settlement_*``: every settlement of the tables whose escrow a new entry touched (a
  settlement moves its escrow's pool in its own transaction).

Left to the full run (daily by default): a transfer recorded with no entry at all, a
settlement that moved no money (pool 0), and an account row changed by hand without an entry
whose change nets to zero in its currency — all only possible by writing around the ledger
service as the tables' owner.

The mark: entry ids come from a sequence, and an id is taken before its transaction commits,
so a transaction holding a smaller id can commit after one holding a bigger id: the highest
id visible in a snapshot is not a safe mark.  :func:`settled_mark` reads the sequence (every id
up to it is taken), then waits until every transaction writing entries at that moment has
ended (committed or rolled back), and only then is the reconciliation snapshot taken: it sees
every committed entry up to the mark, so the next sweep may start after it.  The writers are
the transactions holding ``ROW EXCLUSIVE`` on ``ledger.entries`` of this database in
``pg_locks``: an ``INSERT`` takes that lock before its identity default takes an id, and keeps
it until the transaction ends, which is when its ``virtualxid`` lock goes too.  So readers,
writers of other tables and the other databases of the cluster are never waited for (the
mark once waited for every transaction of the cluster: one long transaction of another
application held it still).  This needs the sequence to hand out ids one at a time
(``CACHE 1``, the identity column's default).  When the wait times out (a long transaction
writing entries), the mark does not move: the next sweep reads the same entries again, and
nothing is skipped.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from ledger.constants import KIND_ROUTES, MAY_GO_NEGATIVE

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = (
    "CHUNK_KEYS",
    "MAX_PROBLEMS_PER_CHECK",
    "Problem",
    "ReconcileReport",
    "reconcile",
    "settled_mark",
    "sweep_reconcile",
)

MAX_PROBLEMS_PER_CHECK = 20
"""Rows listed per failed check (the count of all of them is reported too)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing that does not add up."""

    check: str
    """Which check failed, e.g. ``currency_sum``."""
    message: str
    """What is wrong, with the ids and figures involved."""


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    """The outcome of a reconciliation."""

    problems: list[Problem] = field(default_factory=list)
    accounts: int = 0
    """Accounts checked (incremental: those the new entries touched)."""
    transfers: int = 0
    """Transfers checked (incremental: those of the new entries)."""
    entries: int = 0
    """Entries checked (incremental: the new ones, above ``entries_after``)."""
    kind: str = "full"
    """``full`` or ``incremental``."""
    entries_after: int | None = None
    """Incremental: the entries with an id above this one were checked (the previous mark)."""
    entries_up_to: int | None = None
    """:func:`sweep_reconcile`: the next mark, every entry id up to it is settled and was
    checked (None: unknown, the next sweep runs in full)."""

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return not self.problems

    def summary(self) -> str:
        """One line for operators."""
        state = "ok" if self.ok else f"{len(self.problems)} problem(s)"
        scope = "" if self.kind == "full" else f" (entries after {self.entries_after})"
        return (
            f"ledger reconcile{scope}: {state}: {self.accounts} accounts, "
            f"{self.transfers} transfers, {self.entries} entries"
        )


_POLICY_SQL = " OR ".join(
    f"(type = '{account_type.value}' AND may_go_negative <> {str(allowed).lower()})"
    for account_type, allowed in MAY_GO_NEGATIVE.items()
)


def _route_sql(kind: str, routes: frozenset[tuple[str, str]] | None) -> str:
    if routes is None:
        return f"t.kind = '{kind}'"
    pairs = ", ".join(f"('{debit}', '{credit}')" for debit, credit in sorted(routes))
    return f"(t.kind = '{kind}' AND (d.type, c.type) IN ({pairs}))"


_ROUTES_SQL = " OR ".join(_route_sql(kind.value, routes) for kind, routes in KIND_ROUTES.items())

CHUNK_KEYS = 50_000
"""Accounts, transfers or settlements one statement checks: each check runs over consecutive
ranges of ids (in one snapshot, so the result is that of one statement over everything), and
no statement's time grows with the ledger, which is kept ten years, while every statement must
end within the service's ``RAIZ_DB_STATEMENT_TIMEOUT_MS`` (about 1 s per range at 50,000)."""

KEY_TABLES = {
    "id": "ledger.accounts",
    "a.id": "ledger.accounts",
    "account_id": "ledger.accounts",
    "t.id": "ledger.transfers",
    "s.id": "ledger.settlements",
}
"""The table whose ids each check's key column ranges over."""

CURRENCY_SUM = (
    "currency_sum",
    """SELECT currency, SUM(balance_cents) AS total FROM ledger.accounts WHERE {keys}
       GROUP BY currency""",
    "balances in {currency} sum to {total}, not 0",
)
"""The double-entry check: each range's sums per currency, added up (a currency whose total is
not 0 is a problem, in currency order)."""

CHECKS: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    (
        "balance_equals_entries",
        ("a.id", "e.account_id"),
        """SELECT a.id, a.balance_cents, COALESCE(SUM(e.amount_cents), 0) AS entries_sum
           FROM ledger.accounts a
           LEFT JOIN ledger.entries e ON e.account_id = a.id AND {entry_keys}
           WHERE {keys}
           GROUP BY a.id HAVING a.balance_cents <> COALESCE(SUM(e.amount_cents), 0)
           ORDER BY a.id""",
        "account {id} has balance {balance_cents} but its entries sum to {entries_sum}",
    ),
    (
        "versions_contiguous",
        ("a.id", "e.account_id"),
        """SELECT a.id, a.version, COUNT(e.id) AS entry_count,
                  COALESCE(MIN(e.account_version), 0) AS first_version,
                  COALESCE(MAX(e.account_version), 0) AS last_version
           FROM ledger.accounts a
           LEFT JOIN ledger.entries e ON e.account_id = a.id AND {entry_keys}
           WHERE {keys}
           GROUP BY a.id
           HAVING COUNT(e.id) <> a.version OR COALESCE(MAX(e.account_version), 0) <> a.version
               OR (COUNT(e.id) > 0 AND MIN(e.account_version) <> 1)
           ORDER BY a.id""",
        "account {id} is at version {version} but has {entry_count} entries "
        "(versions {first_version}..{last_version})",
    ),
    (
        "balance_chain",
        ("account_id",),
        """SELECT account_id, account_version, balance_before_cents, previous_after
           FROM (SELECT account_id, account_version, balance_before_cents,
                        LAG(balance_after_cents, 1, 0::bigint)
                            OVER (PARTITION BY account_id ORDER BY account_version)
                            AS previous_after
                 FROM ledger.entries WHERE {keys}) chain
           WHERE balance_before_cents <> previous_after
           ORDER BY account_id, account_version""",
        "entry {account_version} of account {account_id} starts from {balance_before_cents} "
        "but the previous entry ended at {previous_after}",
    ),
    (
        "last_entry_is_balance",
        ("a.id", "e.account_id"),
        """SELECT a.id, a.balance_cents, e.balance_after_cents
           FROM ledger.accounts a
           JOIN ledger.entries e
             ON e.account_id = a.id AND e.account_version = a.version AND {entry_keys}
           WHERE {keys} AND e.balance_after_cents <> a.balance_cents ORDER BY a.id""",
        "account {id} has balance {balance_cents} but its last entry ends at {balance_after_cents}",
    ),
    (
        "transfer_balanced",
        ("t.id", "e.transfer_id"),
        """SELECT t.id, COUNT(e.id) AS entry_count, COALESCE(SUM(e.amount_cents), 0) AS total
           FROM ledger.transfers t
           LEFT JOIN ledger.entries e ON e.transfer_id = t.id AND {entry_keys}
           WHERE {keys}
           GROUP BY t.id, t.amount_cents, t.debit_account_id, t.credit_account_id
           HAVING COUNT(e.id) <> 2
               OR COALESCE(SUM(e.amount_cents), 0) <> 0
               OR COUNT(*) FILTER (WHERE e.account_id = t.debit_account_id
                                     AND e.amount_cents = -t.amount_cents) <> 1
               OR COUNT(*) FILTER (WHERE e.account_id = t.credit_account_id
                                     AND e.amount_cents = t.amount_cents) <> 1
           ORDER BY t.id""",
        "transfer {id} is not balanced: {entry_count} entries summing to {total}",
    ),
    (
        "transfer_currency",
        ("t.id",),
        """SELECT t.id, t.currency, d.currency AS debit_currency, c.currency AS credit_currency
           FROM ledger.transfers t
           JOIN ledger.accounts d ON d.id = t.debit_account_id
           JOIN ledger.accounts c ON c.id = t.credit_account_id
           WHERE {keys} AND (t.currency <> d.currency OR t.currency <> c.currency)
           ORDER BY t.id""",
        "transfer {id} in {currency} moves between {debit_currency} and {credit_currency}",
    ),
    (
        "transfer_route",
        ("t.id",),
        # Built from ledger.constants only, never from input.
        f"""SELECT t.id, t.kind, d.type AS debit_type, c.type AS credit_type
           FROM ledger.transfers t
           JOIN ledger.accounts d ON d.id = t.debit_account_id
           JOIN ledger.accounts c ON c.id = t.credit_account_id
           WHERE {{keys}} AND NOT ({_ROUTES_SQL}) ORDER BY t.id""",  # noqa: S608
        "{kind} transfer {id} moves money from a {debit_type} to a {credit_type}",
    ),
    (
        "reversal_mirrors",
        ("t.id",),
        """SELECT t.id, t.kind, t.reverses_id, o.kind AS original_kind
           FROM ledger.transfers t JOIN ledger.transfers o ON o.id = t.reverses_id
           WHERE {keys}
             AND (t.debit_account_id <> o.credit_account_id
                  OR t.credit_account_id <> o.debit_account_id
                  OR t.amount_cents <> o.amount_cents
                  OR (t.kind = 'entry_refund' AND o.kind <> 'entry_fee'))
           ORDER BY t.id""",
        "{kind} {id} does not move {original_kind} {reverses_id} back between its accounts",
    ),
    (
        "never_negative",
        ("id",),
        """SELECT id, type, balance_cents FROM ledger.accounts
           WHERE {keys} AND NOT may_go_negative AND balance_cents < 0 ORDER BY id""",
        "{type} account {id} is negative: {balance_cents}",
    ),
    (
        "type_policy",
        ("id",),
        # Built from ledger.constants only, never from input.
        f"SELECT id, type, may_go_negative FROM ledger.accounts WHERE {{keys}} AND ({_POLICY_SQL})"  # noqa: S608
        " ORDER BY id",
        "{type} account {id} declares may_go_negative={may_go_negative}",
    ),
    (
        "closed_escrow_empty",
        ("id",),
        """SELECT id, balance_cents, version, closed_version FROM ledger.accounts
           WHERE {keys}
             AND closed_at IS NOT NULL AND (balance_cents <> 0 OR version <> closed_version)
           ORDER BY id""",
        "closed account {id} has balance {balance_cents} at version {version} "
        "(closed at version {closed_version})",
    ),
    (
        "closed_escrow_no_later_entry",
        ("a.id", "e.account_id"),
        """SELECT e.account_id, e.account_version, e.transfer_id
           FROM ledger.entries e JOIN ledger.accounts a ON a.id = e.account_id
           WHERE {keys} AND {entry_keys}
             AND a.closed_version IS NOT NULL AND e.account_version > a.closed_version
           ORDER BY e.account_id, e.account_version""",
        "closed account {account_id} got entry {account_version} (transfer {transfer_id}) "
        "after closing",
    ),
    (
        "settlement_arithmetic",
        ("s.id",),
        """SELECT s.id, s.pool_cents, s.fee_bps, s.fee_cents,
                  (SELECT COALESCE(SUM(p::bigint), 0)
                   FROM jsonb_array_elements_text(s.payouts) p) AS payouts_sum
           FROM ledger.settlements s
           WHERE {keys}
             AND (s.fee_cents <> s.pool_cents * s.fee_bps / 10000
                  OR s.fee_cents + (SELECT COALESCE(SUM(p::bigint), 0)
                                    FROM jsonb_array_elements_text(s.payouts) p) <> s.pool_cents
                  OR jsonb_array_length(s.payouts) <> jsonb_array_length(s.winners))
           ORDER BY s.id""",
        "settlement {id}: pool {pool_cents} at {fee_bps} bps gives fee {fee_cents} and "
        "payouts {payouts_sum}",
    ),
    (
        "settlement_transfers",
        ("s.id",),
        """SELECT s.id, expected.transfer_id, expected.amount_cents,
                  COALESCE(t.amount_cents, 0) AS recorded_cents
           FROM ledger.settlements s
           CROSS JOIN LATERAL (
               SELECT s.id || '/fee' AS transfer_id, s.fee_cents AS amount_cents,
                      s.escrow_account_id AS debit_account_id
               UNION ALL
               SELECT s.id || '/payout/' || (p.position - 1), p.amount::bigint,
                      s.escrow_account_id
               FROM jsonb_array_elements_text(s.payouts) WITH ORDINALITY AS p(amount, position)
           ) expected
           LEFT JOIN ledger.transfers t ON t.id = expected.transfer_id
           WHERE {keys}
             AND (COALESCE(t.amount_cents, 0) <> expected.amount_cents
                  OR (t.id IS NOT NULL AND t.debit_account_id <> expected.debit_account_id))
           ORDER BY s.id, expected.transfer_id""",
        "settlement {id}: transfer {transfer_id} should move {amount_cents}, "
        "recorded {recorded_cents}",
    ),
    (
        "settlement_accounts",
        ("s.id",),
        """SELECT s.id, expected.what, expected.type AS expected_type,
                  expected.owner_id AS expected_owner, a.type, a.owner_id
           FROM ledger.settlements s
           CROSS JOIN LATERAL (
               SELECT 'the escrow' AS what, s.escrow_account_id AS account_id,
                      'table_escrow' AS type, s.table_id::text AS owner_id
               UNION ALL
               SELECT 'the credit account of ' || t.id, t.credit_account_id, 'house_revenue',
                      NULL::text
               FROM ledger.transfers t WHERE t.id = s.id || '/fee'
               UNION ALL
               SELECT 'the credit account of ' || t.id, t.credit_account_id, 'player_wallet',
                      w.winner
               FROM jsonb_array_elements_text(s.winners) WITH ORDINALITY AS w(winner, position)
               JOIN ledger.transfers t ON t.id = s.id || '/payout/' || (w.position - 1)
           ) expected
           JOIN ledger.accounts a ON a.id = expected.account_id
           WHERE {keys}
             AND (a.type <> expected.type
                  OR a.owner_id::text IS DISTINCT FROM expected.owner_id)
           ORDER BY s.id, expected.what""",
        "settlement {id}: {what} is the {type} of {owner_id}, "
        "not the {expected_type} of {expected_owner}",
    ),
)
"""(name, key columns, query returning the offending rows among the ids of ``{keys}``, message
template over the row); each query orders its rows by its key column first.  The range is
repeated on the entries it joins (``{entry_keys}``, on their account or transfer id) so that
PostgreSQL reads only the range's entries, not every entry for every range."""


async def reconcile(engine: AsyncEngine) -> ReconcileReport:
    """Run every check on one consistent snapshot of the database behind ``engine``."""
    async with engine.connect() as connection:
        snapshot = await connection.execution_options(isolation_level="REPEATABLE READ")
        async with snapshot.begin():
            await snapshot.execute(text("SET TRANSACTION READ ONLY"))
            return await _reconcile(snapshot)


SETTLE_POLL_MS = 50
"""How often :func:`settled_mark` looks whether the transactions it waits for have ended."""

_TAKEN_IDS = "SELECT pg_sequence_last_value(pg_get_serial_sequence('ledger.entries', 'id'))"
_WRITERS = """SELECT COALESCE(array_agg(DISTINCT virtualtransaction), CAST('{}' AS text[]))
               FROM pg_locks
               WHERE locktype = 'relation' AND mode = 'RowExclusiveLock'
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND relation = CAST('ledger.entries' AS regclass)"""
"""The transactions writing entries now (``virtualtransaction``: ``backend/local id``)."""
_ENDED = """SELECT NOT EXISTS (SELECT FROM pg_locks WHERE locktype = 'virtualxid'
                               AND virtualxid = ANY(CAST(:running AS text[])))"""
"""Whether every one of them has ended (each holds its ``virtualxid`` lock until then)."""


async def settled_mark(engine: AsyncEngine, wait_ms: int) -> int | None:
    """The highest entry id taken so far, once every transaction that may hold an id up to it
    has ended (a snapshot taken afterwards sees all of them that committed); None when some
    has not ended within ``wait_ms`` milliseconds.  See the module's docstring."""
    async with engine.connect() as connection:
        autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
        taken = (await autocommit.execute(text(_TAKEN_IDS))).scalar()
        # a later statement, so it lists every transaction that took one of them and is open
        running = list((await autocommit.execute(text(_WRITERS))).scalar_one())
        deadline = time.monotonic() + wait_ms / 1000
        while not (await autocommit.execute(text(_ENDED), {"running": running})).scalar_one():
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(SETTLE_POLL_MS / 1000)
    return int(taken or 0)


async def sweep_reconcile(
    engine: AsyncEngine, entries_after: int | None, settle_wait_ms: int
) -> ReconcileReport:
    """The audit sweep's reconciliation: every check over the whole ledger when
    ``entries_after`` is None, else only over the entries above it and what they touched;
    with the next mark in ``entries_up_to`` (see the module's docstring)."""
    mark = await settled_mark(engine, settle_wait_ms)
    async with engine.connect() as connection:
        snapshot = await connection.execution_options(isolation_level="REPEATABLE READ")
        async with snapshot.begin():
            await snapshot.execute(text("SET TRANSACTION READ ONLY"))
            if entries_after is None:
                report = await _reconcile(snapshot)
            else:
                report = await _reconcile_since(snapshot, entries_after)
    if mark is None:  # not settled: the next sweep starts where this one did
        mark = entries_after
    elif entries_after is not None:
        mark = max(mark, entries_after)
    return replace(report, entries_up_to=mark)


Range = tuple[Any, Any]
"""Ids after ``lo`` (None: from the first) up to ``hi`` included (None: to the last)."""


async def _ranges(connection: AsyncConnection, table: str) -> tuple[list[Range], int]:
    """Consecutive ranges of at most ``CHUNK_KEYS`` ids covering every id of ``table`` (and
    beyond both ends), and how many ids it has; a walk of its primary key, statement by
    statement."""
    bounds: list[Any] = []
    while True:
        after = " WHERE id > :after" if bounds else ""
        upper = (
            await connection.execute(
                text(f"SELECT id FROM {table}{after} ORDER BY id OFFSET :skip LIMIT 1"),  # noqa: S608
                {"skip": CHUNK_KEYS - 1, **({"after": bounds[-1]} if bounds else {})},
            )
        ).scalar()
        if upper is None:
            break
        bounds.append(upper)
    after = " WHERE id > :after" if bounds else ""
    rest = (
        await connection.execute(
            text(f"SELECT COUNT(*) FROM {table}{after}"),  # noqa: S608
            {"after": bounds[-1]} if bounds else {},
        )
    ).scalar_one()
    edges = [None, *bounds, None]
    return list(itertools.pairwise(edges)), len(bounds) * CHUNK_KEYS + int(rest)


def _in_range(query: str, columns: Sequence[str], keys: Range) -> tuple[str, dict[str, Any]]:
    """``query`` with its ``{keys}`` (and ``{entry_keys}``) restricted to the ids of ``columns``
    in ``keys``, and its parameters."""
    low, high = keys
    parameters = {
        name: value for name, value in (("low", low), ("high", high)) if value is not None
    }

    def condition(column: str) -> str:
        bounds = [f"{column} > :low"] if low is not None else []
        bounds += [f"{column} <= :high"] if high is not None else []
        return " AND ".join(bounds) or "TRUE"

    names = ("keys", "entry_keys")
    ranged = {name: condition(column) for name, column in zip(names, columns, strict=False)}
    return query.format(**ranged), parameters


async def _reconcile(connection: AsyncConnection) -> ReconcileReport:
    problems: list[Problem] = []
    accounts, account_count = await _ranges(connection, "ledger.accounts")
    ranges = {
        "ledger.accounts": accounts,
        "ledger.transfers": (transfers := await _ranges(connection, "ledger.transfers"))[0],
        "ledger.settlements": (await _ranges(connection, "ledger.settlements"))[0],
    }
    await _currency_sum(connection, accounts, problems)
    for name, columns, query, template in CHECKS:
        await _check_ranges(
            connection, (name, columns, query, template), ranges[KEY_TABLES[columns[0]]], problems
        )
    entries = 0
    for keys in accounts:
        statement, parameters = _in_range(
            "SELECT COUNT(*) FROM ledger.entries WHERE {keys}", ("account_id",), keys
        )
        entries += int((await connection.execute(text(statement), parameters)).scalar_one())
    return ReconcileReport(
        problems=problems, accounts=account_count, transfers=transfers[1], entries=entries
    )


async def _currency_sum(
    connection: AsyncConnection, accounts: list[Range], problems: list[Problem]
) -> None:
    name, query, template = CURRENCY_SUM
    totals: dict[str, int] = {}
    for keys in accounts:
        statement, parameters = _in_range(query, ("id",), keys)
        for currency, total in await connection.execute(text(statement), parameters):
            totals[currency] = totals.get(currency, 0) + int(total)
    unbalanced = [
        {"currency": currency, "total": total}
        for currency, total in sorted(totals.items())
        if total != 0
    ]
    _report(problems, name, template, unbalanced, len(unbalanced))


Check = tuple[str, tuple[str, ...], str, str]
"""(name, key columns, query, message template): an item of ``CHECKS``."""


async def _check_ranges(
    connection: AsyncConnection, check: Check, ranges: list[Range], problems: list[Problem]
) -> None:
    """One check over consecutive ranges of its key column."""
    name, columns, query, template = check
    found: list[Any] = []
    count = 0
    for keys in ranges:
        statement, parameters = _in_range(query, columns, keys)
        rows = (await connection.execute(text(statement), parameters)).mappings().all()
        count += len(rows)
        found.extend(rows[: MAX_PROBLEMS_PER_CHECK - len(found)])
    _report(problems, name, template, found, count)


async def _check_ids(
    connection: AsyncConnection, check: Check, ids: Sequence[Any], problems: list[Problem]
) -> None:
    """One check over the given ids of its key column (``CHUNK_KEYS`` a statement), with its
    ``{entry_keys}`` unrestricted (the entries it joins are found through their index)."""
    name, columns, query, template = check
    statement = query.format(keys=f"{columns[0]} = ANY(:ids)", entry_keys="TRUE")
    found: list[Any] = []
    count = 0
    for start in range(0, len(ids), CHUNK_KEYS):
        chunk = list(ids[start : start + CHUNK_KEYS])
        rows = (await connection.execute(text(statement), {"ids": chunk})).mappings().all()
        count += len(rows)
        found.extend(rows[: MAX_PROBLEMS_PER_CHECK - len(found)])
    _report(problems, name, template, found, count)


ACCOUNT_ONLY_CHECKS = frozenset({"never_negative", "type_policy", "closed_escrow_empty"})
"""Checks that read accounts only: the incremental run still runs them over every account."""
TRANSFER_CHECKS = frozenset(
    {"transfer_balanced", "transfer_currency", "transfer_route", "reversal_mirrors"}
)
"""Checks the incremental run runs over the transfers of the new entries."""
SETTLEMENT_CHECKS = frozenset(
    {"settlement_arithmetic", "settlement_transfers", "settlement_accounts"}
)
"""Checks the incremental run runs over the settlements of the tables whose escrow a new
entry touched (keyed on ``s.table_id``, which is indexed)."""

NEW_ENTRY_CHECKS: tuple[tuple[str, str, str], ...] = (
    (
        "balance_chain",
        """SELECT e.account_id, e.account_version, e.balance_before_cents,
                  COALESCE(p.balance_after_cents, 0) AS previous_after
           FROM ledger.entries e
           LEFT JOIN ledger.entries p
             ON p.account_id = e.account_id AND p.account_version = e.account_version - 1
           WHERE e.id > :low AND e.id <= :high
             AND ((e.account_version = 1 AND e.balance_before_cents <> 0)
                  OR p.balance_after_cents <> e.balance_before_cents)
           ORDER BY e.account_id, e.account_version""",
        "entry {account_version} of account {account_id} starts from {balance_before_cents} "
        "but the previous entry ended at {previous_after}",
    ),
    (
        "versions_contiguous",
        """SELECT e.account_id, e.account_version, e.account_version - 1 AS previous_version
           FROM ledger.entries e
           WHERE e.id > :low AND e.id <= :high AND e.account_version > 1
             AND NOT EXISTS (SELECT FROM ledger.entries p
                             WHERE p.account_id = e.account_id
                               AND p.account_version = e.account_version - 1)
           ORDER BY e.account_id, e.account_version""",
        "account {account_id} has entry {account_version} but no entry {previous_version}",
    ),
    (
        "closed_escrow_no_later_entry",
        """SELECT e.account_id, e.account_version, e.transfer_id
           FROM ledger.entries e JOIN ledger.accounts a ON a.id = e.account_id
           WHERE e.id > :low AND e.id <= :high
             AND a.closed_version IS NOT NULL AND e.account_version > a.closed_version
           ORDER BY e.account_id, e.account_version""",
        "closed account {account_id} got entry {account_version} (transfer {transfer_id}) "
        "after closing",
    ),
)
"""(name, query over the new entries with ids in ``(:low, :high]``, message template): the
incremental forms of the checks that read every entry of an account."""

TOUCHED_VERSION: Check = (
    "versions_contiguous",
    ("a.id",),
    """SELECT a.id, a.version, COALESCE(last.account_version, 0) AS last_version
       FROM ledger.accounts a
       LEFT JOIN LATERAL (SELECT e.account_version FROM ledger.entries e
                          WHERE e.account_id = a.id
                          ORDER BY e.account_version DESC LIMIT 1) last ON TRUE
       WHERE {keys} AND a.version <> COALESCE(last.account_version, 0)
       ORDER BY a.id""",
    "account {id} is at version {version} but its last entry is version {last_version}",
)
"""A touched account's version is its highest entry's (one index probe each)."""


async def _reconcile_since(connection: AsyncConnection, after: int) -> ReconcileReport:
    """The incremental checks of the entries with an id above ``after`` (module docstring)."""
    problems: list[Problem] = []
    accounts, _ = await _ranges(connection, "ledger.accounts")
    await _currency_sum(connection, accounts, problems)
    top = (await connection.execute(text("SELECT MAX(id) FROM ledger.entries"))).scalar()
    touched: set[Any] = set()
    transfers: set[str] = set()
    entries = 0
    found: dict[str, tuple[list[Any], int]] = {name: ([], 0) for name, _, _ in NEW_ENTRY_CHECKS}
    for low in range(after, int(top or 0), CHUNK_KEYS):
        window = {"low": low, "high": low + CHUNK_KEYS}
        rows = (
            await connection.execute(
                text(
                    "SELECT account_id, transfer_id FROM ledger.entries"
                    " WHERE id > :low AND id <= :high"
                ),
                window,
            )
        ).all()
        entries += len(rows)
        touched.update(row[0] for row in rows)
        transfers.update(row[1] for row in rows)
        for name, query, _ in NEW_ENTRY_CHECKS:
            offending = (await connection.execute(text(query), window)).mappings().all()
            listed, count = found[name]
            listed.extend(offending[: MAX_PROBLEMS_PER_CHECK - len(listed)])
            found[name] = (listed, count + len(offending))
    for name, _, template in NEW_ENTRY_CHECKS:
        _report(problems, name, template, *found[name])
    account_ids = sorted(touched)
    await _check_ids(connection, TOUCHED_VERSION, account_ids, problems)
    tables: list[Any] = []
    for start in range(0, len(account_ids), CHUNK_KEYS):
        tables.extend(
            (
                await connection.execute(
                    text(
                        "SELECT owner_id FROM ledger.accounts"
                        " WHERE id = ANY(:ids) AND type = 'table_escrow'"
                    ),
                    {"ids": account_ids[start : start + CHUNK_KEYS]},
                )
            ).scalars()
        )
    by_key = {
        "accounts": account_ids,
        "transfers": sorted(transfers),
        "tables": sorted(tables),
    }
    for check in CHECKS:
        name = check[0]
        if name in ACCOUNT_ONLY_CHECKS:
            await _check_ranges(connection, check, accounts, problems)
        elif name == "last_entry_is_balance":
            await _check_ids(connection, check, by_key["accounts"], problems)
        elif name in TRANSFER_CHECKS:
            await _check_ids(connection, check, by_key["transfers"], problems)
        elif name in SETTLEMENT_CHECKS:
            table_check = (name, ("s.table_id",), check[2], check[3])
            await _check_ids(connection, table_check, by_key["tables"], problems)
        # the others are replaced by NEW_ENTRY_CHECKS and TOUCHED_VERSION
    return ReconcileReport(
        problems=problems,
        accounts=len(account_ids),
        transfers=len(transfers),
        entries=entries,
        kind="incremental",
        entries_after=after,
    )


def _report(problems: list[Problem], name: str, template: str, rows: list[Any], count: int) -> None:
    """The first ``MAX_PROBLEMS_PER_CHECK`` of ``count`` offending rows of check ``name``."""
    for row in rows[:MAX_PROBLEMS_PER_CHECK]:
        problems.append(Problem(name, template.format(**_plain(row))))
    if count > MAX_PROBLEMS_PER_CHECK:
        problems.append(Problem(name, f"... and {count - MAX_PROBLEMS_PER_CHECK} more like these"))


def _plain(row: Any) -> dict[str, Any]:
    return dict(row.items()) if hasattr(row, "items") else dict(row)
