"""`sessionstore query` resolves every table reference in its own scope (issue #34).

The guard used to let a table name through if a CTE of that name was defined anywhere in
the statement, so a CTE in an inner scope unlocked the catalog of the same name outside it
(`pg_authid`, `sqlite_master`, `alembic_version`, ...). The corpus (tests/support/
query_scopes.py) generates those shapes from scope templates x catalog targets; each is
refused on both backends, through the real CLI, with the database unchanged, and each is a
real catalog read when the guard is out of the way. CTEs over our own tables still work,
including one named like a catalog where the database reads the CTE.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from sessionstore import QueryRejectedError, SessionStore
from sessionstore.cli._query_guard import vetted
from tests.support.cli import assert_refused, run
from tests.support.query_scopes import corpus, dump

CORPUS = [(dialect, *entry) for dialect in ("sqlite", "postgresql") for entry in corpus(dialect)]


def _backend(url: str) -> str:
    return "postgresql" if url.startswith("postgresql") else "sqlite"


def test_the_corpus_is_large_and_covers_every_shape() -> None:
    sqlite, postgres = corpus("sqlite"), corpus("postgresql")
    assert len(sqlite) >= 60 and len(postgres) >= 60
    words = " ".join(sql for _, _, sql in CORPUS)
    for shape in ("LATERAL", "TABLE ", "VALUES", "UNION ALL", "RECURSIVE", "$$", "U&'"):
        assert shape in words, shape
    for shape in ("regclass", "regproc", "regrole", '"PG_AUTHID"', "pG_AuThId", "[sqlite_master]"):
        assert shape in words, shape


@pytest.mark.parametrize(("dialect", "name", "sql"), CORPUS, ids=[f"{d}-{n}" for d, n, _ in CORPUS])
def test_the_guard_refuses_every_scope_variant(dialect: str, name: str, sql: str) -> None:
    with pytest.raises(QueryRejectedError, match=r"^refused: "):
        vetted(sql, dialect)


def test_the_corpus_is_refused_through_the_cli_and_nothing_changes(seeded: str) -> None:
    """Every statement: exit 2, one line, no traceback; the whole database dumps the same."""
    before = dump(seeded)
    for name, sql in corpus(_backend(seeded)):
        result = run("query", sql, "--url", seeded, "--json")
        assert_refused(result, 2, "refused:")
        assert result.stdout == "", name
        assert len(result.output.strip().splitlines()) == 1, (name, result.output)
    assert dump(seeded) == before


def test_without_the_guard_each_statement_reads_the_catalog(seeded: str) -> None:
    """The corpus is live: run as typed in a read-only transaction, every statement is
    answered by the database (it reads the catalog, or on SQLite a later CTE it may see)."""

    def raw(conn: Any, sql: str) -> list[Any]:
        return list(conn.exec_driver_sql(sql).fetchall())

    async def attempt() -> list[str]:
        failed = []
        async with SessionStore(seeded, read_only=True) as store:
            for name, sql in corpus(_backend(seeded)):
                try:
                    await store.read_snapshot(raw, sql)
                except Exception as error:  # each one is named in the assertion below
                    failed.append(f"{name}: {error}")
        return failed

    assert asyncio.run(attempt()) == []


def _catalog(url: str) -> str:
    return "pg_authid" if url.startswith("postgresql") else "sqlite_master"


LEGITIMATE = [
    ("WITH s AS (SELECT session_id FROM sessions) SELECT count(*) AS n FROM s", 2),
    # Named like a catalog, read where it is visible: the database reads the CTE.
    ("WITH {catalog} AS (SELECT session_id FROM sessions) SELECT count(*) AS n FROM {catalog}", 2),
    (
        "WITH a AS (SELECT session_id FROM sessions), b AS (SELECT session_id FROM a WHERE "
        "session_id IN (WITH c AS (SELECT session_id FROM messages) SELECT session_id FROM c)) "
        "SELECT count(*) AS n FROM b",
        2,
    ),
    (
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 5) "
        "SELECT count(*) AS n FROM r",
        5,
    ),
    (
        "SELECT count(*) AS n FROM (WITH w AS (SELECT session_id FROM sessions) "
        "SELECT session_id FROM w UNION SELECT session_id FROM messages) AS q",
        2,
    ),
    ("WITH Recent AS (SELECT session_id FROM sessions) SELECT count(*) AS n FROM RECENT", 2),
    (
        "WITH w AS (SELECT session_id FROM sessions) SELECT count(*) AS n FROM w "
        "WHERE EXISTS (SELECT 1 FROM w AS inner_w WHERE inner_w.session_id = w.session_id)",
        2,
    ),
]


@pytest.mark.parametrize(("template", "expected"), LEGITIMATE)
def test_ctes_over_our_tables_still_answer(seeded: str, template: str, expected: int) -> None:
    sql = template.format(catalog=_catalog(seeded))
    result = run("query", sql, "--url", seeded, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"n": expected}]


def test_a_later_cte_sees_an_earlier_one(seeded: str) -> None:
    sql = (
        "WITH a AS (SELECT session_id FROM sessions WHERE session_id = 'work'), "
        "b AS (SELECT count(*) AS n FROM messages WHERE session_id IN (SELECT session_id FROM a)) "
        "SELECT n FROM b"
    )
    direct = "SELECT count(*) AS n FROM messages WHERE session_id = 'work'"
    answered = run("query", sql, "--url", seeded, "--json")
    expected = run("query", direct, "--url", seeded, "--json")
    assert answered.exit_code == 0 and expected.exit_code == 0, answered.output
    assert json.loads(answered.stdout) == json.loads(expected.stdout)
    assert json.loads(answered.stdout)[0]["n"] > 2
