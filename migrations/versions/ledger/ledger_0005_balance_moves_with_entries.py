"""ledger: an account's balance moves only with its entries, and starts at zero

``accounts_guard_update`` (``ledger_0001``) refuses a balance change that keeps the version,
but a role allowed to update ``balance_cents`` and ``version`` (the service, ``ledger_0004``)
could still move both together without writing an entry: reconciliation would report it, a
sweep later.  Now the database refuses it at commit:

* ``accounts_move_with_entries``: a deferred constraint trigger, checked at commit for every
  update that changes an account's version or balance, requires one entry of that account
  for each version the update went past, the last one ending at the new balance (a posting
  writes its entries and moves its accounts in one statement, so the check holds whatever
  the order inside the transaction);
* ``accounts_open_empty``: an account is created empty (balance 0, version 0, not closed);
  its money then arrives by entries only.

Revision ID: ledger_0005
Revises: ledger_0004
Create Date: 2026-11-30 13:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "ledger_0005"
down_revision: str | Sequence[str] | None = "ledger_0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

REQUIRE_ENTRIES = """
CREATE FUNCTION ledger.require_entries() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    written bigint;
    last_after bigint;
BEGIN
    SELECT count(*), max(balance_after_cents) FILTER (WHERE account_version = NEW.version)
      INTO written, last_after
      FROM ledger.entries
     WHERE account_id = NEW.id
       AND account_version > OLD.version AND account_version <= NEW.version;
    IF written <> NEW.version - OLD.version OR last_after IS DISTINCT FROM NEW.balance_cents
    THEN
        RAISE EXCEPTION 'ledger.accounts: account % moved from version % to % (balance %) '
            'without its entries', NEW.id, OLD.version, NEW.version, NEW.balance_cents
            USING HINT = 'Money moves only by transfers: each writes an entry per account.';
    END IF;
    RETURN NULL;
END;
$$
"""

OPEN_EMPTY = """
CREATE FUNCTION ledger.require_empty_account() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.balance_cents <> 0 OR NEW.version <> 0
        OR NEW.closed_at IS NOT NULL OR NEW.closed_version IS NOT NULL THEN
        RAISE EXCEPTION 'ledger.accounts: account % must be created empty and open', NEW.id
            USING HINT = 'Money moves only by transfers: each writes an entry per account.';
    END IF;
    RETURN NEW;
END;
$$
"""


def upgrade() -> None:
    op.execute(REQUIRE_ENTRIES)
    op.execute(
        "CREATE CONSTRAINT TRIGGER accounts_move_with_entries AFTER UPDATE ON ledger.accounts"
        " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW"
        " WHEN (NEW.version <> OLD.version OR NEW.balance_cents <> OLD.balance_cents)"
        " EXECUTE FUNCTION ledger.require_entries()"
    )
    op.execute(OPEN_EMPTY)
    op.execute(
        "CREATE TRIGGER accounts_open_empty BEFORE INSERT ON ledger.accounts"
        " FOR EACH ROW EXECUTE FUNCTION ledger.require_empty_account()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER accounts_open_empty ON ledger.accounts")
    op.execute("DROP FUNCTION ledger.require_empty_account()")
    op.execute("DROP TRIGGER accounts_move_with_entries ON ledger.accounts")
    op.execute("DROP FUNCTION ledger.require_entries()")
