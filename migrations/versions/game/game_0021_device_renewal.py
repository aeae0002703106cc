"""game: a login from a known device renews it

A device lived 180 days from its first login; now each successful login presenting its token
moves ``login_devices.expires_at`` to 180 days later (``app.accounts.devices``).  The serving
role, which could insert and delete devices only (``game_0018``), may update that column and
no other; a guard trigger (as on the mutable tables of ``game_0008``) refuses every role a
change of a device's id, owner, token digest or creation time.

Revision ID: game_0021
Revises: game_0020
Create Date: 2026-11-30 23:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "game_0021"
down_revision: str | Sequence[str] | None = "game_0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SERVICE_ROLE = "raiz_service"

GUARD_UPDATE = """
CREATE FUNCTION game.guard_login_devices_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.user_id IS DISTINCT FROM OLD.user_id
        OR NEW.token_sha256 IS DISTINCT FROM OLD.token_sha256
        OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
        RAISE EXCEPTION 'game.login_devices: only a device''s expiry may change';
    END IF;
    RETURN NEW;
END;
$$
"""


def upgrade() -> None:
    op.execute(f"GRANT UPDATE (expires_at) ON game.login_devices TO {SERVICE_ROLE}")
    op.execute(GUARD_UPDATE)
    op.execute(
        "CREATE TRIGGER login_devices_guard_update BEFORE UPDATE ON game.login_devices "
        "FOR EACH ROW EXECUTE FUNCTION game.guard_login_devices_update()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS login_devices_guard_update ON game.login_devices")
    op.execute("DROP FUNCTION IF EXISTS game.guard_login_devices_update()")
    op.execute(f"REVOKE UPDATE (expires_at) ON game.login_devices FROM {SERVICE_ROLE}")
