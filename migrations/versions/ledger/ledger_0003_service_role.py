"""ledger: the serving role ``raiz_service`` and its grants on the ledger schema

The service connects as a login role that is a member of the NOLOGIN group ``raiz_service``;
migrations run as the owner of the schemas (``RAIZ_MIGRATION_DATABASE_URL``, docs/operations.md
"Database roles").  The serving role reads and appends, changes only mutable tables and owns
nothing: it cannot drop, alter or truncate a table, nor drop or disable the triggers that keep
rounds and the ledger append-only.  Each schema branch grants its own tables (the branches'
order is not fixed, so each creates the cluster-wide role when it is missing: the migrating
role then needs CREATEROLE; it is never dropped, other databases of the cluster may use it).

Default privileges give every table (sequence) a later migration creates in the schema, as the
same owner, SELECT/INSERT/UPDATE/DELETE (USAGE): a migration that creates an append-only table
revokes UPDATE and DELETE (``tests/integration/test_db_roles.py`` checks every table).

Revision ID: ledger_0003
Revises: ledger_0002
Create Date: 2026-11-30 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "ledger_0003"
down_revision: str | Sequence[str] | None = "ledger_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SERVICE_ROLE = "raiz_service"
"""The NOLOGIN group role the service's login role is a member of (frozen at this revision)."""

CREATE_ROLE = f"""
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{SERVICE_ROLE}') THEN
        CREATE ROLE {SERVICE_ROLE} NOLOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;  -- created meanwhile by another branch's migration, or another database's
END
$$
"""
REFUSE_POWERFUL_ROLE = f"""
DO $$
BEGIN
    IF EXISTS (
        SELECT FROM pg_roles WHERE rolname = '{SERVICE_ROLE}'
        AND (rolsuper OR rolcreaterole OR rolcreatedb OR rolreplication OR rolbypassrls)
    ) THEN
        RAISE EXCEPTION 'role {SERVICE_ROLE} has administrative attributes; it must not'
            USING HINT = 'ALTER ROLE {SERVICE_ROLE} NOSUPERUSER NOCREATEROLE NOCREATEDB '
                         'NOREPLICATION NOBYPASSRLS';
    END IF;
END
$$
"""

INSERT_ONLY_TABLES = ("ledger.transfers", "ledger.entries", "ledger.settlements")
"""Append-only: triggers refuse UPDATE, DELETE and TRUNCATE."""
UPDATED_TABLES = ("ledger.accounts",)
"""Balances; a trigger guards what may change, another refuses DELETE."""


def upgrade() -> None:
    op.execute(CREATE_ROLE)
    op.execute(REFUSE_POWERFUL_ROLE)
    # exactly these grants, whatever default privileges a table was created with (the
    # branches' order is not fixed: game_0005's may have run before a table existed)
    op.execute(
        f"REVOKE ALL ON {', '.join(INSERT_ONLY_TABLES + UPDATED_TABLES)} FROM {SERVICE_ROLE}"
    )
    op.execute(f"GRANT USAGE ON SCHEMA ledger TO {SERVICE_ROLE}")
    op.execute(f"GRANT SELECT, INSERT ON {', '.join(INSERT_ONLY_TABLES)} TO {SERVICE_ROLE}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE ON {', '.join(UPDATED_TABLES)} TO {SERVICE_ROLE}")
    op.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA ledger TO {SERVICE_ROLE}")
    op.execute(
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA ledger "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {SERVICE_ROLE}"
    )
    op.execute(
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA ledger GRANT USAGE ON SEQUENCES TO {SERVICE_ROLE}"
    )


def downgrade() -> None:
    op.execute(
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA ledger REVOKE USAGE ON SEQUENCES FROM {SERVICE_ROLE}"
    )
    op.execute(
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA ledger "
        f"REVOKE SELECT, INSERT, UPDATE, DELETE ON TABLES FROM {SERVICE_ROLE}"
    )
    op.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA ledger FROM {SERVICE_ROLE}")
    op.execute(
        f"REVOKE ALL ON {', '.join(INSERT_ONLY_TABLES + UPDATED_TABLES)} FROM {SERVICE_ROLE}"
    )
    op.execute(f"REVOKE USAGE ON SCHEMA ledger FROM {SERVICE_ROLE}")
