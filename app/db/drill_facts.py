"""What the restore drill compares (``app.db.restore_drill``): the facts of a database read in
one snapshot (every table's row count and digest, sequences, balances, the latest checkpoint,
the Alembic heads, the structure), and their differences, one line each."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import asyncpg

__all__ = ("Facts", "compare_facts", "quote", "read_facts")

SHOWN_PER_KIND = 20
"""Structure lines shown per side of a difference (the rest are counted)."""

_OUR_SCHEMAS = """n.nspname NOT IN ('pg_catalog', 'information_schema')
                  AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'"""

# Identifiers come from the catalog and are quoted (_quote); no value is spliced.
_TABLES = f"""SELECT n.nspname, c.relname FROM pg_class c
              JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE c.relkind IN ('r', 'p') AND {_OUR_SCHEMAS} ORDER BY 1, 2"""  # noqa: S608
_SEQUENCES = f"""SELECT n.nspname, c.relname FROM pg_class c
                 JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE c.relkind = 'S' AND {_OUR_SCHEMAS} ORDER BY 1, 2"""  # noqa: S608


def _acl(column: str) -> str:
    """An ACL column as sorted text (a restore may grant in another order)."""
    return (
        "COALESCE((SELECT string_agg(a::text, ',' ORDER BY a::text) "  # noqa: S608
        f"FROM unnest({column}) a), '-')"
    )


_STRUCTURE = f"""
SELECT format('schema %I owner %s acl %s', n.nspname, pg_get_userbyid(n.nspowner),
              {_acl("n.nspacl")}), NULL
FROM pg_namespace n WHERE {_OUR_SCHEMAS}
UNION ALL
SELECT format('relation %s kind %s owner %s acl %s', c.oid::regclass, c.relkind,
              pg_get_userbyid(c.relowner), {_acl("c.relacl")}), NULL
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'S', 'v', 'm', 'f') AND {_OUR_SCHEMAS}
UNION ALL
SELECT format('column %s.%I acl %s', c.oid::regclass, a.attname, {_acl("a.attacl")}), NULL
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE a.attacl IS NOT NULL AND NOT a.attisdropped AND {_OUR_SCHEMAS}
UNION ALL
SELECT format('trigger %s.%I enabled %s', t.tgrelid::regclass, t.tgname, t.tgenabled),
       pg_get_triggerdef(t.oid)
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE NOT t.tgisinternal AND {_OUR_SCHEMAS}
UNION ALL
SELECT format('constraint %s.%I validated %s', c.oid::regclass, k.conname, k.convalidated),
       pg_get_constraintdef(k.oid)
FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE {_OUR_SCHEMAS}
UNION ALL
SELECT format('index %s valid %s', i.indexrelid::regclass, i.indisvalid),
       pg_get_indexdef(i.indexrelid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE {_OUR_SCHEMAS}
UNION ALL
SELECT format('function %s owner %s acl %s', p.oid::regprocedure,
              pg_get_userbyid(p.proowner), {_acl("p.proacl")}),
       pg_get_functiondef(p.oid)
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE p.prokind IN ('f', 'p') AND {_OUR_SCHEMAS}
UNION ALL
SELECT format('default privileges of %s in %s on %s: %s', pg_get_userbyid(d.defaclrole),
              COALESCE(d.defaclnamespace::regnamespace::text, '(all schemas)'),
              d.defaclobjtype, {_acl("d.defaclacl")}), NULL
FROM pg_default_acl d
UNION ALL
SELECT format('extension %I %s', e.extname, e.extversion), NULL FROM pg_extension e
"""  # noqa: S608
"""Each line, and the definition it stands for (a trigger's, constraint's, index's, function's)."""

_CAST = re.compile(r"::[a-z_ ]+(\[\])?")
_NOISE = re.compile(r"[()\s]+")


def _fingerprint(definition: str | None) -> str:
    """A short digest of a definition as PostgreSQL prints it, insensitive to what a dump and
    restore change in the print without changing the meaning: a restored
    ``role IN ('a', 'b')`` on a varchar column prints ``ARRAY[('a'::character varying)::text,
    ...]`` where the source printed ``(ARRAY['a'::character varying, ...])::text[]``, so casts,
    parentheses and white space are left out."""
    if definition is None:
        return ""
    normalized = _NOISE.sub("", _CAST.sub("", definition))
    return " " + hashlib.md5(normalized.encode(), usedforsecurity=False).hexdigest()[:12]


def quote(name: str) -> str:
    """``name`` as an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _row_digest(schema: str, table: str) -> str:
    """Row count and an order-independent digest of a table's rows: the sum of the first 64
    bits of each row text's MD5 (no sort: one sequential read)."""
    return (
        "SELECT count(*), COALESCE(sum(('x' || left(md5(ROW(r.*)::text), 16))"  # noqa: S608
        "::bit(64)::bigint::numeric), 0)::text "
        f"FROM {quote(schema)}.{quote(table)} AS r"
    )


@dataclass(frozen=True, slots=True)
class Facts:
    """What must be the same in the source and in its restored copy."""

    tables: dict[str, tuple[int, str]]
    """Every table (``schema.name``): its row count and rows' digest."""
    sequences: dict[str, tuple[int, bool]]
    """Every sequence: ``last_value`` and ``is_called``."""
    balances: dict[str, tuple[int, int]]
    """Per currency: the sum of the ledger's account balances, and the number of accounts."""
    checkpoint: str | None
    """The latest signed checkpoint: id, tree size, Merkle root, key (None: none yet)."""
    heads: tuple[str, ...]
    """The Alembic revisions recorded in ``public.alembic_version``."""
    structure: frozenset[str]
    """One line per owner and grant, trigger, constraint, index, function, extension."""

    @property
    def rows(self) -> int:
        """Rows in every table together."""
        return sum(count for count, _ in self.tables.values())


async def read_facts(connection: asyncpg.Connection) -> Facts:
    """The facts of the database behind ``connection``, in its current transaction (the caller
    opens a repeatable-read one to get a single snapshot)."""
    tables: dict[str, tuple[int, str]] = {}
    for schema, table in await connection.fetch(_TABLES):
        count, digest = await connection.fetchrow(_row_digest(schema, table))
        tables[f"{schema}.{table}"] = (int(count), str(digest))
    sequences: dict[str, tuple[int, bool]] = {}
    for schema, sequence in await connection.fetch(_SEQUENCES):
        row = await connection.fetchrow(
            f"SELECT last_value, is_called FROM {quote(schema)}.{quote(sequence)}"  # noqa: S608
        )
        sequences[f"{schema}.{sequence}"] = (int(row["last_value"]), bool(row["is_called"]))
    balances: dict[str, tuple[int, int]] = {}
    if "ledger.accounts" in tables:
        for row in await connection.fetch(
            "SELECT currency, sum(balance_cents) AS total, count(*) AS accounts "
            "FROM ledger.accounts GROUP BY currency ORDER BY currency"
        ):
            balances[str(row["currency"])] = (int(row["total"]), int(row["accounts"]))
    checkpoint = None
    if "game.checkpoints" in tables:
        row = await connection.fetchrow(
            "SELECT id, tree_size, encode(root, 'hex') AS root, key_id "
            "FROM game.checkpoints ORDER BY id DESC LIMIT 1"
        )
        if row is not None:
            checkpoint = (
                f"#{row['id']} over {row['tree_size']} rounds, root {row['root']}, "
                f"key {row['key_id']}"
            )
    heads: tuple[str, ...] = ()
    if "public.alembic_version" in tables:
        heads = tuple(
            sorted(
                str(value)
                for (value,) in await connection.fetch(
                    "SELECT version_num FROM public.alembic_version"
                )
            )
        )
    structure = frozenset(
        f"{line}{_fingerprint(definition)}"
        for line, definition in await connection.fetch(_STRUCTURE)
    )
    return Facts(tables, sequences, balances, checkpoint, heads, structure)


def _differing(kind: str, source: dict[str, object], copy: dict[str, object]) -> list[str]:
    problems = []
    for name in sorted(source.keys() | copy.keys()):
        if name not in copy:
            problems.append(f"{kind} {name}: in the source, missing from the copy")
        elif name not in source:
            problems.append(f"{kind} {name}: in the copy only")
        elif source[name] != copy[name]:
            problems.append(
                f"{kind} {name}: {source[name]} in the source, {copy[name]} in the copy"
            )
    return problems


def compare_facts(source: Facts, copy: Facts) -> list[str]:
    """Every difference between the source's facts and the copy's, one line each."""
    problems: list[str] = []
    for name in sorted(source.tables.keys() | copy.tables.keys()):
        if name not in copy.tables:
            problems.append(f"table {name}: in the source, missing from the copy")
        elif name not in source.tables:
            problems.append(f"table {name}: in the copy only")
        else:
            (source_rows, source_digest), (copy_rows, copy_digest) = (
                source.tables[name],
                copy.tables[name],
            )
            if source_rows != copy_rows:
                problems.append(
                    f"table {name}: {source_rows} rows in the source, {copy_rows} in the copy"
                )
            elif source_digest != copy_digest:
                problems.append(f"table {name}: {source_rows} rows in both, but different contents")
    problems += _differing("sequence", dict(source.sequences), dict(copy.sequences))
    problems += _differing("balance", dict(source.balances), dict(copy.balances))
    if source.checkpoint != copy.checkpoint:
        problems.append(
            f"latest checkpoint: {source.checkpoint} in the source, {copy.checkpoint} in the copy"
        )
    if source.heads != copy.heads:
        problems.append(
            f"alembic heads: {', '.join(source.heads) or 'none'} in the source, "
            f"{', '.join(copy.heads) or 'none'} in the copy"
        )
    for side, lines in (
        ("the source only", sorted(source.structure - copy.structure)),
        ("the copy only", sorted(copy.structure - source.structure)),
    ):
        for line in lines[:SHOWN_PER_KIND]:
            problems.append(f"structure in {side}: {line}")
        if len(lines) > SHOWN_PER_KIND:
            problems.append(f"structure in {side}: {len(lines) - SHOWN_PER_KIND} more lines")
    return problems
