"""The service's database role: it should own nothing (docs/operations.md, "Database roles").

Migrations ``game_0005``, ``ledger_0003``, ``rng_0002`` and ``compliance_0003`` (and the later
migrations for their new tables) grant the NOLOGIN group ``raiz_service`` what the service
needs; a deployment serves as a login member of it and migrates as the schemas' owner
(``RAIZ_MIGRATION_DATABASE_URL``).  A role that owns the tables, or a superuser, could drop
them or disable the triggers that keep rounds and the ledger append-only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import text

if TYPE_CHECKING:
    from app.db import Database

__all__ = ("SERVICE_ROLE", "serving_role_problem")

SERVICE_ROLE = "raiz_service"
"""The group role the ``*_service_role`` migrations grant."""

_ROLE_QUERY = text(
    """
    SELECT current_user AS role,
           (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser,
           (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname IN ('game', 'ledger', 'rng') AND c.relkind IN ('r', 'p')
              AND pg_has_role(current_user, c.relowner, 'USAGE')) AS owned
    """
)


async def serving_role_problem(database: Database) -> str | None:
    """Why the role ``database`` connects as could undo retention (a superuser, or the owner
    of our tables), or ``None``."""
    async with database.engine.connect() as connection:
        row = (await connection.execute(_ROLE_QUERY)).one()
    if row.superuser:
        return f"DATABASE_URL's role {row.role} is a superuser"
    if row.owned:
        return f"DATABASE_URL's role {row.role} owns {row.owned} tables of the service"
    return None
