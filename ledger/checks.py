"""The reconciliation's checks (:mod:`ledger.reconcile` runs them): each one SQL query over a
range of ids that returns the rows breaking a rule of the ledger, with the message each row
becomes.  ``CHECKS`` and ``CURRENCY_SUM`` are the full run's; ``NEW_ENTRY_CHECKS`` and
``TOUCHED_VERSION`` are the incremental run's forms of the checks that read every entry of an
account, and the ``*_CHECKS`` sets say how the incremental run treats the others."""

from __future__ import annotations

from ledger.constants import KIND_ROUTES, MAY_GO_NEGATIVE

__all__ = (
    "ACCOUNT_ONLY_CHECKS",
    "CHECKS",
    "CURRENCY_SUM",
    "KEY_TABLES",
    "NEW_ENTRY_CHECKS",
    "SETTLEMENT_CHECKS",
    "TOUCHED_VERSION",
    "TRANSFER_CHECKS",
    "Check",
)

Check = tuple[str, tuple[str, ...], str, str]
"""(name, key columns, query, message template): an item of ``CHECKS``."""

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
