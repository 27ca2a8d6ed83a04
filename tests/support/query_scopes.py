"""The scope-variant corpus of `sessionstore query`: templates x catalog targets.

Each template defines a CTE named after a catalog table and reads that name where the CTE
is not visible (a sibling or outer scope, an earlier CTE, its own body without RECURSIVE,
another case when the name is quoted), so the database reads the real catalog there. The
guard that let any CTE name anywhere unlock a table let every one of them through.
`{t}` is the target, `{T}` it in upper case, `{Tt}` in mixed case, `{s}` its schema.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Final

import asyncpg
from sqlalchemy.engine import make_url

POSTGRES_TARGETS: Final = (
    "pg_authid",
    "pg_hba_file_rules",
    "pg_file_settings",
    "pg_stat_activity",
    "pg_database",
    "pg_shadow",
    "pg_settings",
    "alembic_version",
)
SQLITE_TARGETS: Final = (
    "sqlite_master",
    "sqlite_schema",
    "sqlite_temp_master",
    "sqlite_temp_schema",
    "alembic_version",
)

BOTH: Final = {
    "subquery in FROM": "SELECT (SELECT count(*) FROM {t}) AS leaked "
    "FROM (WITH {t} AS (SELECT 1 AS x) SELECT x FROM {t}) AS q",
    "scalar subquery": "SELECT (WITH {t} AS (SELECT 1 AS x) SELECT count(*) FROM {t}) AS decoy, "
    "count(*) AS leaked FROM {t}",
    "nested CTE": "WITH a AS (WITH {t} AS (SELECT 1 AS x) SELECT x FROM {t}) "
    "SELECT count(*) AS leaked FROM a, {t}",
    "CTE inside a later CTE's subquery": "WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM "
    "(WITH {t} AS (SELECT 1 AS x) SELECT x FROM {t}) AS i) SELECT count(*) AS leaked FROM b, {t}",
    "forward reference": "WITH a AS (SELECT count(*) AS leaked FROM {t}), "
    "{t} AS (SELECT 1 AS x) SELECT leaked FROM a",
    "EXISTS": "SELECT count(*) AS leaked FROM {t} "
    "WHERE EXISTS (WITH {t} AS (SELECT 1 AS x) SELECT x FROM {t})",
    "IN beside a join": "SELECT count(*) AS leaked FROM sessions CROSS JOIN {t} "
    "WHERE 1 IN (WITH {t} AS (SELECT 1 AS x) SELECT x FROM {t}) OR true",
    "set operation": "SELECT count(*) AS leaked FROM {t} UNION ALL "
    "SELECT x FROM (WITH {t} AS (SELECT 1 AS x) SELECT x FROM {t}) AS q",
    "VALUES as the CTE": "SELECT (SELECT count(*) FROM {t}) AS leaked "
    "FROM (WITH {t}(x) AS (VALUES (1)) SELECT x FROM {t}) AS q",
    "recursive CTE in an inner scope": "SELECT count(*) AS leaked FROM {t}, "
    "(WITH RECURSIVE {t}(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM {t} WHERE x < 3) "
    "SELECT x FROM {t}) AS q",
    "ORDER BY subquery": "SELECT x FROM (WITH {t} AS (SELECT 1 AS x) SELECT x FROM {t}) AS q "
    "ORDER BY (SELECT count(*) FROM {t})",
    "quoted and mixed case": "SELECT (SELECT count(*) FROM {Tt}) AS leaked "
    'FROM (WITH "{t}" AS (SELECT 1 AS x) SELECT x FROM "{t}") AS q',
    "qualified name beside its CTE": "WITH {t} AS (SELECT 1 AS x) "
    "SELECT count(*) AS leaked FROM {s}.{t}",
}
# SQLite reads any self-reference as recursive; PostgreSQL, without RECURSIVE, as the table.
POSTGRES_ONLY: Final = {
    "self reference without RECURSIVE": "WITH {t}(x) AS (SELECT 1 UNION ALL "
    "SELECT count(*) FROM {t}) SELECT x FROM {t}",
    "lateral join": "SELECT q.leaked FROM (WITH {t} AS (SELECT 1 AS x) SELECT x FROM {t}) AS s, "
    "LATERAL (SELECT count(*) AS leaked FROM {t}) AS q",
    "TABLE": "SELECT count(*) AS leaked FROM (WITH {t} AS (SELECT 1 AS x) TABLE {t}) AS s, "
    "(TABLE {t}) AS q",
    "parenthesised WITH in a set operation": "(WITH {t} AS (SELECT 1 AS x) SELECT x FROM {t}) "
    "UNION ALL SELECT count(*) FROM {t}",
    "quoted upper case folds to the catalog": 'WITH "{T}" AS (SELECT 1 AS x) '
    "SELECT count(*) AS leaked FROM {T}",
    "dollar-quoted strings": "SELECT $q$ WITH {t} AS (SELECT 1) $q$ AS decoy, "
    "(SELECT count(*) FROM {t}) AS leaked "
    "FROM (WITH {t} AS (SELECT $$x$$ AS x) SELECT x FROM {t}) AS q",
    "U& strings": "SELECT U&'\\0041' AS decoy, count(*) AS leaked FROM {t} "
    "WHERE EXISTS (WITH {t} AS (SELECT U&'\\0078' AS x) SELECT x FROM {t})",
    "regclass cast": "WITH {t} AS (SELECT 1 AS x) "
    "SELECT x, CAST('{s}.{t}' AS regclass)::oid AS leaked FROM {t}",
    "regproc and regrole casts": "WITH {t} AS (SELECT 1 AS x) "
    "SELECT x, 'pg_sleep'::regproc::oid AS p, 10::regrole::text AS leaked FROM {t}",
}
SQLITE_ONLY: Final = {
    "brackets and backticks": "SELECT (SELECT count(*) FROM [{t}]) AS leaked "
    "FROM (WITH `{t}` AS (SELECT 1 AS x) SELECT x FROM `{t}`) AS q",
    "upper case in a sibling scope": "SELECT (SELECT count(*) FROM {T}) AS leaked "
    "FROM (WITH {t} AS (SELECT 1 AS x) SELECT x FROM {T}) AS q",
}


def _schema(dialect: str, target: str) -> str:
    if dialect == "sqlite":
        return "temp" if target.startswith("sqlite_temp_") else "main"
    return "public" if target == "alembic_version" else "pg_catalog"


def _mixed(name: str) -> str:
    return "".join(c.upper() if i % 2 else c for i, c in enumerate(name))


def corpus(dialect: str) -> list[tuple[str, str]]:
    """(template name + target, statement) for "sqlite" or "postgresql"."""
    postgres = dialect == "postgresql"
    templates = {**BOTH, **(POSTGRES_ONLY if postgres else SQLITE_ONLY)}
    targets = POSTGRES_TARGETS if postgres else SQLITE_TARGETS
    return [
        (
            f"{name}: {target}",
            template.format(
                t=target, T=target.upper(), Tt=_mixed(target), s=_schema(dialect, target)
            ),
        )
        for name, template in templates.items()
        for target in targets
    ]


def dump(url: str) -> list[str]:
    """Everything the database holds that a query could change: SQLite's full SQL dump,
    or every row of every table of PostgreSQL's public schema as text, in order."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        conn = sqlite3.connect(f"file:{parsed.database}?mode=ro", uri=True)
        try:
            return list(conn.iterdump())
        finally:
            conn.close()
    return asyncio.run(_postgres_dump(parsed.set(drivername="postgresql").render_as_string(False)))


async def _postgres_dump(dsn: str) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        tables = await conn.fetch(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'public' ORDER BY table_name"
        )
        lines: list[str] = []
        for (table,) in tables:
            rows = await conn.fetch(f'SELECT t::text FROM public."{table}" AS t ORDER BY 1')
            lines += [f"{table}: {row[0]}" for row in rows]
        return lines
    finally:
        await conn.close()
