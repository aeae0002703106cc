"""Apply and inspect Alembic migrations programmatically (``raiz db upgrade``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

import migrations

__all__ = (
    "SchemaRevisions",
    "SchemaStatus",
    "alembic_config",
    "schema_revisions",
    "schema_status",
    "upgrade",
)

MIGRATIONS_DIR = Path(migrations.__file__).resolve().parent

SchemaStatus = Literal["ok", "newer", "outdated", "missing"]
"""How a database's recorded revisions compare with this code's (:func:`schema_status`)."""


def _scripts_config() -> Config:
    config = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def alembic_config(url: str) -> Config:
    """An Alembic configuration for ``url`` that works from any working directory."""
    config = _scripts_config()
    config.attributes["url"] = url
    return config


def upgrade(url: str, revision: str = "heads") -> None:
    """Apply every pending migration of every schema branch."""
    command.upgrade(alembic_config(url), revision)


@dataclass(frozen=True, slots=True)
class SchemaRevisions:
    """The migration revisions this code ships, read once from the scripts."""

    heads: frozenset[str]
    """The last revision of each branch: what a database migrated for this code records."""
    known: frozenset[str]
    """Every revision of every branch."""


@functools.cache
def schema_revisions() -> SchemaRevisions:
    """This code's revisions (read from disk at the first call of the process, then cached)."""
    script = ScriptDirectory.from_config(_scripts_config())
    return SchemaRevisions(
        heads=frozenset(script.get_heads()),
        known=frozenset(revision.revision for revision in script.walk_revisions()),
    )


def schema_status(recorded: frozenset[str], revisions: SchemaRevisions) -> SchemaStatus:
    """Compare the revisions a database records (``public.alembic_version``) with the code's.

    ``missing``: never migrated.  ``outdated``: a branch stops short of this code's head (a
    revision it records is an ancestor of a head, or a head is absent and no revision this
    code does not know could stand for it).  ``newer``: the heads this code does not find
    are replaced by revisions it does not know, i.e. a newer release migrated the database;
    migrations are additive, so this code still runs on it (docs/operations.md, "Zero-
    downtime restart and deploy").  ``ok``: exactly this code's heads.
    """
    if not recorded:
        return "missing"
    if recorded == revisions.heads:
        return "ok"
    behind = (recorded & revisions.known) - revisions.heads
    absent = revisions.heads - recorded
    unknown = recorded - revisions.known
    if behind or len(absent) > len(unknown):
        return "outdated"
    return "newer"
