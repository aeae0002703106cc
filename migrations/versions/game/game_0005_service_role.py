"""game: the serving role ``raiz_service`` and its grants on the game schema

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

Revision ID: game_0005
Revises: game_0004
Create Date: 2026-11-30 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "game_0005"
down_revision: str | Sequence[str] | None = "game_0004"
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

INSERT_ONLY_TABLES = (
    # append-only: triggers refuse UPDATE, DELETE and TRUNCATE
    "game.rounds",
    "game.round_log",
    "game.round_results",
    # never changed by the code: every fee change is a new row, an action's answer is kept
    "game.fee_rates",
    "game.table_actions",
)
UPDATED_TABLES = (
    "game.users",
    "game.access_tokens",
    "game.deadlines",
    "game.tables",
    "game.seats",
    "game.presence",
)
DELETED_TABLES = ("game.login_failures",)
"""Expired failures are deleted (``AccountService``); nothing else is ever deleted."""


def upgrade() -> None:
    op.execute(CREATE_ROLE)
    op.execute(REFUSE_POWERFUL_ROLE)
    # exactly these grants, whatever default privileges a table was created with (the
    # branches' order is not fixed: game_0005's may have run before a table existed)
    op.execute(
        f"REVOKE ALL ON {', '.join(INSERT_ONLY_TABLES + UPDATED_TABLES + DELETED_TABLES)} FROM {SERVICE_ROLE}"
    )
    op.execute(f"GRANT USAGE ON SCHEMA game TO {SERVICE_ROLE}")
    op.execute(f"GRANT SELECT, INSERT ON {', '.join(INSERT_ONLY_TABLES)} TO {SERVICE_ROLE}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE ON {', '.join(UPDATED_TABLES)} TO {SERVICE_ROLE}")
    op.execute(f"GRANT SELECT, INSERT, DELETE ON {', '.join(DELETED_TABLES)} TO {SERVICE_ROLE}")
    op.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA game TO {SERVICE_ROLE}")
    # `raiz serve` reads the schema version before serving (nothing pending: nothing to do)
    op.execute(f"GRANT SELECT ON public.alembic_version TO {SERVICE_ROLE}")
    op.execute(
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA game "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {SERVICE_ROLE}"
    )
    op.execute(
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA game GRANT USAGE ON SEQUENCES TO {SERVICE_ROLE}"
    )


def downgrade() -> None:
    op.execute(
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA game REVOKE USAGE ON SEQUENCES FROM {SERVICE_ROLE}"
    )
    op.execute(
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA game "
        f"REVOKE SELECT, INSERT, UPDATE, DELETE ON TABLES FROM {SERVICE_ROLE}"
    )
    op.execute(f"REVOKE ALL ON public.alembic_version FROM {SERVICE_ROLE}")
    op.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA game FROM {SERVICE_ROLE}")
    op.execute(
        f"REVOKE ALL ON {', '.join(INSERT_ONLY_TABLES + UPDATED_TABLES + DELETED_TABLES)} FROM {SERVICE_ROLE}"
    )
    op.execute(f"REVOKE USAGE ON SCHEMA game FROM {SERVICE_ROLE}")
