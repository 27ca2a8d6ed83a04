"""`sessionstore query` cannot escape: an attacker's corpus, refused on both backends.

Each statement below either wrote, ran a program, read a server file, touched another
session, held a lock, slept, or grew without bound before the guard; now each is refused
(exit 2, one line) and the database is unchanged. The least-privileged role that
`migrate --query-role` creates is tested on the real PostgreSQL with the guard out of the
way, so the database's own refusal is what is checked.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from sessionstore import QueryRejectedError, SessionStore
from sessionstore.cli._query_guard import DOCUMENTED_TABLES, vetted
from tests.support.citus import one_ddl_at_a_time
from tests.support.cli import assert_refused, db_state, run

ESCAPES = [
    # Parser differentials: a second statement hidden in comments or quotes.
    "/* /* */ SELECT '*/ COPY (SELECT 1) TO PROGRAM ''id'' --' */ SELECT 1",
    "SELECT 1 /* ; DELETE FROM messages */; DELETE FROM messages",
    "SELECT 1; -- \nDELETE FROM messages",
    "SELECT 'a'';DELETE FROM messages;--'; DELETE FROM events",
    # Writes, DDL, server files and programs.
    "COPY (SELECT * FROM messages) TO PROGRAM 'id > /tmp/owned'",
    "COPY messages TO '/tmp/owned.csv'",
    "SELECT * INTO stolen FROM messages",
    "WITH gone AS (DELETE FROM events RETURNING id) SELECT count(*) FROM gone",
    "CREATE TABLE owned (x int)",
    "ATTACH DATABASE '/tmp/owned.db' AS owned",
    "SELECT * FROM sessions FOR UPDATE",
    # Functions with effects outside the query.
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT pg_ls_dir('/')",
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity",
    "SELECT pg_advisory_lock(42)",
    "SELECT pg_sleep(1000)",
    "SELECT set_config('statement_timeout', '0', false)",
    "SELECT lo_import('/etc/passwd')",
    "SELECT load_extension('/tmp/evil.so')",
    # Catalogs and other schemas.
    "SELECT datname FROM pg_database",
    "SELECT * FROM pg_catalog.pg_authid",
    "SELECT * FROM information_schema.tables",
    "SELECT sql FROM sqlite_master",
    # Values of any size.
    "SELECT length(randomblob(1100000000))",
    "SELECT length(zeroblob(1100000000))",
    "SELECT length(repeat('x', 1000000000))",
    "SELECT lpad('x', 1000000000, 'y')",
]


@pytest.mark.parametrize("sql", ESCAPES)
def test_every_escape_is_refused_and_nothing_changes(seeded: str, sql: str) -> None:
    before = db_state(seeded)
    result = run("query", sql, "--url", seeded)
    assert_refused(result, 2, "refused:")
    assert db_state(seeded) == before


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_what_runs_is_the_checked_tree_without_comments(dialect: str) -> None:
    statement = vetted("SELECT count(*) /* ; DROP TABLE x */ FROM messages -- tail", dialect)
    assert "/*" not in statement and "--" not in statement and "DROP" not in statement
    assert statement.upper().startswith("SELECT COUNT(*)")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT tool_name, count(*) AS calls FROM messages WHERE session_id = 'x' "
        "GROUP BY tool_name ORDER BY calls DESC",
        "WITH recent AS (SELECT * FROM events ORDER BY id DESC LIMIT 10) SELECT event FROM recent",
        "SELECT session_id FROM sessions UNION SELECT session_id FROM archives",
        "EXPLAIN SELECT * FROM messages",
        "VALUES (1), (2)",
        "SELECT json_extract(payload, '$.role') FROM messages",
        "SELECT datetime('now', '-7 days'), round(100.0 * context_tokens / 128000, 1) "
        "FROM sessions",
    ],
)
def test_ordinary_questions_pass(sql: str) -> None:
    assert vetted(sql, "sqlite")


def test_every_documented_table_may_be_read() -> None:
    assert {"sessions", "messages", "compactions", "archives", "events"} <= DOCUMENTED_TABLES
    for table in DOCUMENTED_TABLES:
        assert vetted(f"SELECT count(*) FROM {table}", "postgresql")
    with pytest.raises(QueryRejectedError, match="not a sessionstore table"):
        vetted("SELECT * FROM alembic_version", "sqlite")


@pytest.fixture
def query_role(fresh_pg_url: str) -> Iterator[tuple[str, str]]:
    """A database migrated with `--query-role`, and the role (dropped afterwards)."""
    role = f"ss_reader_{uuid.uuid4().hex[:8]}"
    with one_ddl_at_a_time(fresh_pg_url):  # on Citus a role reaches every node
        result = run("migrate", "--url", fresh_pg_url, "--query-role", role)
    assert result.exit_code == 0, result.output
    assert f"role '{role}'" in result.output
    yield fresh_pg_url, role

    async def drop() -> None:
        async with SessionStore(fresh_pg_url) as store, store.engine.begin() as conn:
            await conn.execute(sa.text(f'DROP OWNED BY "{role}"'))
            await conn.execute(sa.text(f'DROP ROLE "{role}"'))

    with one_ddl_at_a_time(fresh_pg_url):
        asyncio.run(drop())


async def _as_role(url: str, role: str, sql: str) -> object:
    async with SessionStore(url) as store, store.engine.begin() as conn:
        await conn.execute(sa.text(f'SET LOCAL ROLE "{role}"'))
        return (await conn.execute(sa.text(sql))).all()


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("SELECT pg_read_file('/etc/passwd')", "permission denied"),
        ("COPY (SELECT 1) TO PROGRAM 'true'", "permission denied|must be superuser"),
        ("COPY (SELECT 1) TO '/tmp/ss_owned.csv'", "permission denied|must be superuser"),
        ("SELECT * FROM alembic_version", "permission denied"),
        ("CREATE TABLE owned (x int)", "permission denied"),
    ],
)
def test_the_query_role_is_refused_by_postgresql_itself(
    query_role: tuple[str, str], sql: str, words: str
) -> None:
    url, role = query_role
    with pytest.raises(sa.exc.DBAPIError, match=f"(?i){words}"):
        asyncio.run(_as_role(url, role, sql))


def test_query_runs_as_the_role_and_its_timeout_fires(query_role: tuple[str, str]) -> None:
    url, role = query_role
    answered = run("query", "SELECT current_user AS who", "--url", url, "--role", role, "--json")
    assert answered.exit_code == 0, answered.output
    assert role in answered.stdout
    endless = "SELECT count(*) FROM generate_series(1, 10000000000)"
    stopped = run("query", endless, "--url", url, "--role", role, "--timeout", "0.5")
    assert_refused(stopped, 1, "timed out:", "longer than 0.5 s")
    bad = run("query", "SELECT 1", "--url", url, "--role", "Robert'); DROP")
    assert_refused(bad, 2, "role name")


def test_a_role_on_sqlite_is_a_one_line_usage_error(sqlite_seeded: str) -> None:
    result = run("query", "SELECT 1", "--url", sqlite_seeded, "--role", "reader")
    assert_refused(result, 2, "--role", "roles are PostgreSQL's")
    migrate = run("migrate", "--url", sqlite_seeded, "--query-role", "reader")
    assert_refused(migrate, 2, "--query-role", "roles are PostgreSQL's")
