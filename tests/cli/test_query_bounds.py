"""`sessionstore query` bounds what it holds, and every failure is one line (issue #34).

Before: format()/printf() with a width and string_agg made 200 MB values, a 900 MB one hit
SQLite's heap cap as a raw MemoryError traceback, and `PRAGMA page_size(1024)` (a write
that returns no rows) crashed with ResourceClosedError. Now a result past
MAX_RESULT_BYTES (rows streamed and counted, one SQLite value capped by
SQLITE_LIMIT_LENGTH) stops with one line and exit 1; a refused statement is one line,
exit 2.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from typing import Any

import pytest
from typer.testing import Result

from sessionstore import QueryTooLargeError, SessionStore
from sessionstore.cli import _query
from tests.support.cli import assert_refused, db_state, run


def _one_line(result: Result) -> None:
    assert result.stdout == "", result.stdout[:200]
    assert len(result.output.strip().splitlines()) == 1, result.output


def _numbers(url: str, count: int) -> str:
    """A relation of `count` integers `i`, in the backend's own words."""
    if url.startswith("postgresql"):
        return f"generate_series(1, {count}) AS g(i)"
    return (
        f"(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count}) "
        "SELECT i FROM n) AS g"
    )


def _padded(url: str) -> str:
    """`i` as 99 characters (a width the guard allows)."""
    return "format('%99s', i)" if url.startswith("postgresql") else "printf('%99d', i)"


def test_one_huge_value_is_stopped_with_one_line(db_url: str) -> None:
    """About 100 MB in one value: SQLite refuses to build it, PostgreSQL's arrives and
    is counted; either way exit 1 and the bound, not the value."""
    agg = "string_agg" if db_url.startswith("postgresql") else "group_concat"
    sql = f"SELECT {agg}({_padded(db_url)}, '') AS s FROM {_numbers(db_url, 1_000_000)}"
    result = run("query", sql, "--url", db_url, "--json")
    assert_refused(result, 1, "too large:", "64 MiB", "WHERE / LIMIT")
    _one_line(result)


def test_many_rows_are_stopped_when_they_pass_the_bound(db_url: str) -> None:
    sql = f"SELECT {_padded(db_url)} AS s FROM {_numbers(db_url, 1_000_000)}"
    result = run("query", sql, "--url", db_url, "--nl", "--limit", "10000000")
    assert_refused(result, 1, "too large:", "64 MiB `query` holds", "at row")
    _one_line(result)
    under = run("query", sql, "--url", db_url, "--nl", "--limit", "1000")
    assert under.exit_code == 0, under.output
    assert len(under.stdout.splitlines()) == 1000


@pytest.mark.parametrize(
    "call",
    [
        "format('%900000000s', 'x')",
        "format('%-123s', 'x')",
        "format('%*s', 900000000, 'x')",
        "format('%1$*2$s', 'x', 900000000)",
        "format('%' || '900000000' || 's', 'x')",
    ],
)
def test_format_widths_that_make_huge_values_are_refused(db_url: str, call: str) -> None:
    result = run("query", f"SELECT {call} AS s", "--url", db_url)
    assert_refused(result, 2, "refused:", "format()")
    _one_line(result)


def test_printf_widths_are_refused_on_sqlite(sqlite_seeded: str) -> None:
    for call in ("printf('%.900000000c', 'x')", "printf('%.*c', 900000000, 'x')"):
        result = run("query", f"SELECT {call} AS s", "--url", sqlite_seeded)
        assert_refused(result, 2, "refused:", "printf()")
    fine = run("query", "SELECT printf('%5.2f|%-4s|', 3.14159, 'ab') AS s", "--url", sqlite_seeded)
    assert fine.exit_code == 0, fine.output
    assert " 3.14|ab  |" in fine.stdout


def test_small_format_widths_still_work(db_url: str) -> None:
    result = run("query", "SELECT format('%5s|%-3s|', 'ab', 'c') AS s", "--url", db_url, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"s": "   ab|c  |"}]


def test_running_out_of_sqlite_heap_is_one_line(sqlite_seeded: str) -> None:
    """The heap cap (lowered here so a small query meets it) is a MemoryError inside
    sqlite3: one line and exit 1, not a traceback. In a process of its own, as the CLI runs:
    SQLite's heap limit is the whole process's, and at 4 MiB every other connection of a
    test worker would fail with it."""
    sql = f"SELECT length(group_concat(printf('%99d', i), '')) AS n FROM {_numbers('', 200_000)}"
    lowered = (
        "import sys\n"
        "from sessionstore.cli import _query, main\n"
        "_query.SQLITE_HEAP_LIMIT = 4 * 1024 * 1024\n"
        "sys.argv = ['sessionstore', *sys.argv[1:]]\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", lowered, "query", sql, "--url", sqlite_seeded],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "too large:" in lines[0] and "more memory than it may use" in lines[0]
    )
    assert "Traceback" not in done.stderr


def test_the_bounds_end_with_the_statement(db_url: str) -> None:
    """The connection goes back to the pool as it came: SQLite's length limit restored (its
    heap cap, global to the process, stays at the cap), PostgreSQL out of the statement's
    transaction with its settings gone."""
    sql = f"SELECT {_padded(db_url)} AS s FROM {_numbers(db_url, 1_000_000)}"

    def attempt(conn: Any) -> tuple[Any, ...]:
        raw = conn.connection.driver_connection
        before = _settings(conn, raw)
        with pytest.raises(QueryTooLargeError):
            _query._select(conn, sql, 10_000_000, 30.0, None)
        return before, _settings(conn, raw)

    async def check() -> tuple[Any, ...]:
        async with SessionStore(db_url, read_only=True) as store:
            return await store.read_snapshot(attempt)

    before, after = asyncio.run(check())
    if db_url.startswith("sqlite"):  # SQLite's heap cap is the process's and only lowers
        heap = before[0] if before[0] in range(1, _query.SQLITE_HEAP_LIMIT) else None
        assert after[0] == (heap or _query.SQLITE_HEAP_LIMIT)
        before, after = before[1:], after[1:]
    assert before == after


def _settings(conn: Any, raw: Any) -> tuple[Any, ...]:
    if isinstance(raw, sqlite3.Connection):
        heap = raw.execute("PRAGMA hard_heap_limit").fetchone()[0]
        return heap, raw.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
    shown = [
        conn.exec_driver_sql(f"SHOW {name}").scalar_one()
        for name in ("statement_timeout", "transaction_read_only", "role")
    ]
    # Outside a transaction each statement is its own: now() is the statement's timestamp.
    return (*shown, conn.exec_driver_sql("SELECT now() = statement_timestamp()").scalar_one())


def test_a_pragma_that_writes_is_one_line_and_writes_nothing(sqlite_seeded: str) -> None:
    """`PRAGMA page_size(1024)` sets the page size and returns no rows: it used to crash
    with ResourceClosedError; now it is refused like any write."""
    size = run("query", "PRAGMA page_size", "--url", sqlite_seeded, "--json")
    assert size.exit_code == 0, size.output
    before = db_state(sqlite_seeded)
    for pragma in ("PRAGMA page_size(1024)", "PRAGMA page_size = 1024", "PRAGMA user_version(7)"):
        result = run("query", pragma, "--url", sqlite_seeded)
        assert_refused(result, 2, "refused:", "read-only PRAGMAs")
        _one_line(result)
    assert db_state(sqlite_seeded) == before
    again = run("query", "PRAGMA page_size", "--url", sqlite_seeded, "--json")
    assert json.loads(again.stdout) == json.loads(size.stdout)


def test_pragma_on_postgresql_is_one_line(pg_url: str) -> None:
    result = run("query", "PRAGMA page_size(1024)", "--url", pg_url)
    assert_refused(result, 2, "refused: PRAGMA is SQLite's")
    _one_line(result)


def test_an_error_while_rows_stream_is_one_line(db_url: str) -> None:
    """A division by zero at row 1000 fails while the rows are fetched (on PostgreSQL,
    from the server-side cursor): still the database's words on one line."""
    failing = "1 / (i - 1000)"
    if not db_url.startswith("postgresql"):  # SQLite divides by zero into NULL: bad JSON fails
        failing = "json_extract(CASE WHEN i = 1000 THEN 'x' ELSE '1' END, '$')"
    sql = f"SELECT {failing} AS x FROM {_numbers(db_url, 2000)}"
    result = run("query", sql, "--url", db_url, "--limit", "5000")
    assert_refused(result, 2, "the database rejected it")
    _one_line(result)
