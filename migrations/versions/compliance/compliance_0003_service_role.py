"""compliance: the serving role ``raiz_service`` and its grants on the compliance tables

The service connects as a login role that is a member of the NOLOGIN group ``raiz_service``;
migrations run as the owner of the schemas (``RAIZ_MIGRATION_DATABASE_URL``, docs/operations.md
"Database roles").  The serving role reads and appends, changes only mutable tables and owns
nothing: it cannot drop, alter or truncate a table, nor drop or disable the triggers that keep
rounds and the ledger append-only.  Each schema branch grants its own tables (the branches'
order is not fixed, so each creates the cluster-wide role when it is missing: the migrating
role then needs CREATEROLE; it is never dropped, other databases of the cluster may use it).

The compliance tables are all insert-only; the ``game`` schema's default privileges come
with ``game_0005``.

Revision ID: compliance_0003
Revises: compliance_0002
Create Date: 2026-11-30 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "compliance_0003"
down_revision: str | Sequence[str] | None = "compliance_0002"
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
    "game.signing_keys",
    "game.round_signatures",
    "game.merkle_leaves",
    "game.checkpoints",
    "game.access_log",
    "game.audit_sweeps",
)
"""Append-only: triggers refuse UPDATE, DELETE and TRUNCATE."""


def upgrade() -> None:
    op.execute(CREATE_ROLE)
    op.execute(REFUSE_POWERFUL_ROLE)
    # exactly these grants, whatever default privileges a table was created with (the
    # branches' order is not fixed: game_0005's may have run before a table existed)
    op.execute(f"REVOKE ALL ON {', '.join(INSERT_ONLY_TABLES)} FROM {SERVICE_ROLE}")
    op.execute(f"GRANT SELECT, INSERT ON {', '.join(INSERT_ONLY_TABLES)} TO {SERVICE_ROLE}")
    op.execute(f"GRANT USAGE ON SCHEMA game TO {SERVICE_ROLE}")
    op.execute(
        "GRANT USAGE ON SEQUENCE game.access_log_id_seq, game.checkpoints_id_seq, "
        f"game.audit_sweeps_id_seq TO {SERVICE_ROLE}"
    )


def downgrade() -> None:
    op.execute(
        "REVOKE ALL ON SEQUENCE game.access_log_id_seq, game.checkpoints_id_seq, "
        f"game.audit_sweeps_id_seq FROM {SERVICE_ROLE}"
    )
    op.execute(f"REVOKE ALL ON {', '.join(INSERT_ONLY_TABLES)} FROM {SERVICE_ROLE}")
