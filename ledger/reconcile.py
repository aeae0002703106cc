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
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from ledger.constants import KIND_ROUTES, MAY_GO_NEGATIVE

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = ("CHUNK_KEYS", "MAX_PROBLEMS_PER_CHECK", "Problem", "ReconcileReport", "reconcile")

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
    transfers: int = 0
    entries: int = 0

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return not self.problems

    def summary(self) -> str:
        """One line for operators."""
        state = "ok" if self.ok else f"{len(self.problems)} problem(s)"
        return (
            f"ledger reconcile: {state}: {self.accounts} accounts, {self.transfers} transfers, "
            f"{self.entries} entries"
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
    for name, columns, query, template in CHECKS:
        found: list[Any] = []
        count = 0
        for keys in ranges[KEY_TABLES[columns[0]]]:
            statement, parameters = _in_range(query, columns, keys)
            rows = (await connection.execute(text(statement), parameters)).mappings().all()
            count += len(rows)
            found.extend(rows[: MAX_PROBLEMS_PER_CHECK - len(found)])
        _report(problems, name, template, found, count)
    entries = 0
    for keys in accounts:
        statement, parameters = _in_range(
            "SELECT COUNT(*) FROM ledger.entries WHERE {keys}", ("account_id",), keys
        )
        entries += int((await connection.execute(text(statement), parameters)).scalar_one())
    return ReconcileReport(
        problems=problems, accounts=account_count, transfers=transfers[1], entries=entries
    )


def _report(problems: list[Problem], name: str, template: str, rows: list[Any], count: int) -> None:
    """The first ``MAX_PROBLEMS_PER_CHECK`` of ``count`` offending rows of check ``name``."""
    for row in rows[:MAX_PROBLEMS_PER_CHECK]:
        problems.append(Problem(name, template.format(**_plain(row))))
    if count > MAX_PROBLEMS_PER_CHECK:
        problems.append(Problem(name, f"... and {count - MAX_PROBLEMS_PER_CHECK} more like these"))


def _plain(row: Any) -> dict[str, Any]:
    return dict(row.items()) if hasattr(row, "items") else dict(row)
