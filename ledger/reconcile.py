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

from ledger.checks import (
    ACCOUNT_ONLY_CHECKS,
    CHECKS,
    CURRENCY_SUM,
    KEY_TABLES,
    NEW_ENTRY_CHECKS,
    SETTLEMENT_CHECKS,
    TOUCHED_VERSION,
    TRANSFER_CHECKS,
    Check,
)

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


CHUNK_KEYS = 50_000
"""Accounts, transfers or settlements one statement checks: each check runs over consecutive
ranges of ids (in one snapshot, so the result is that of one statement over everything), and
no statement's time grows with the ledger, which is kept ten years, while every statement must
end within the service's ``RAIZ_DB_STATEMENT_TIMEOUT_MS`` (about 1 s per range at 50,000)."""


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
