"""The access log: every compliance read, recorded in the request (or command) that made it."""

from __future__ import annotations

import getpass
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from app.compliance.models import AccessLogEntry

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.accounts.service import Principal

__all__ = ("audit_compliance_read", "cli_actor", "list_access", "record_access")


def cli_actor() -> str:
    """The actor of a command-line read: ``cli:<operating-system user>``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # pragma: no cover - no passwd entry
        user = "unknown"
    return f"cli:{user}"[:64]


def record_access(
    session: AsyncSession,
    *,
    actor: Principal | str,
    action: str,
    target: str | None = None,
    details: dict[str, Any] | None = None,
) -> None:
    """Add one access-log row to the session (committed with the caller's transaction)."""
    if isinstance(actor, str):
        who, role = actor, "cli"
    else:
        who, role = str(actor.user_id), actor.role
    session.add(
        AccessLogEntry(
            actor=who,
            role=role,
            action=action,
            target=target,
            details=details or {},
        )
    )


async def audit_compliance_read(
    session: AsyncSession,
    principal: Principal,
    action: str,
    target: str | None,
    details: dict[str, Any] | None = None,
) -> None:
    """Record and commit a compliance officer's read made through a route staff of several
    roles may call (docs/compliance.md), as the ``/compliance`` routes do; operators' reads
    are operations and are not logged."""
    if principal.role != "compliance":
        return
    record_access(session, actor=principal, action=action, target=target, details=details)
    await session.commit()


async def list_access(
    session: AsyncSession, *, limit: int, before_id: int | None, actor: str | None
) -> list[dict[str, Any]]:
    """Access-log rows, newest first (keyset on the id)."""
    query = select(AccessLogEntry).order_by(AccessLogEntry.id.desc()).limit(limit)
    if before_id is not None:
        query = query.where(AccessLogEntry.id < before_id)
    if actor is not None:
        query = query.where(AccessLogEntry.actor == actor)
    return [
        {
            "id": row.id,
            "at": row.at.isoformat(),
            "actor": row.actor,
            "role": row.role,
            "action": row.action,
            "target": row.target,
            "details": row.details,
        }
        for row in await session.scalars(query)
    ]
