"""Apply and inspect Alembic migrations programmatically (``raiz db upgrade``)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

import migrations

__all__ = ("alembic_config", "upgrade")

MIGRATIONS_DIR = Path(migrations.__file__).resolve().parent


def alembic_config(url: str) -> Config:
    """An Alembic configuration for ``url`` that works from any working directory."""
    config = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["url"] = url
    return config


def upgrade(url: str, revision: str = "heads") -> None:
    """Apply every pending migration of every schema branch."""
    command.upgrade(alembic_config(url), revision)
