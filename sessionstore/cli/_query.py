"""`sessionstore query`: read-only SQL over the documented schema.

Three guards: the statement must be a single SELECT (or WITH ... SELECT, EXPLAIN,
VALUES, or a read-only PRAGMA), the store is opened read-only (SQLite `mode=ro`,
PostgreSQL READ ONLY transactions), so the database refuses a write even if the first
check were fooled, and a timeout the database enforces (SQLite: a progress handler;
PostgreSQL: statement_timeout) stops a runaway query. At most `--limit` rows are held.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Final

import typer
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from .._errors import QueryRejectedError, StoreTimeoutError
from .._redaction import Redactor, redaction_disabled_event
from ._common import ConfigOption, UrlOption, console, err_console, open_store, record_audit
from ._query_output import render_table, render_text
from ._text import shown

DEFAULT_LIMIT: Final = 10_000
_UNWRAPPED_WIDTH: Final = 1_000_000  # wide enough that no stored cell is wrapped or cut
DEFAULT_TIMEOUT_S: Final = 30.0
_READ_ONLY_START: Final = re.compile(r"^\s*(select|with|explain|values)\b", re.IGNORECASE)
# PRAGMAs that only report (SQLite); any `=` (a setting) is refused.
_READ_ONLY_PRAGMAS: Final = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "user_version",
        "page_count",
        "page_size",
        "journal_mode",
        "encoding",
        "compile_options",
    }
)
_PRAGMA: Final = re.compile(r"^\s*pragma\s+(\w+)\s*(?:\(\s*[\w\"'.]+\s*\))?\s*$", re.IGNORECASE)
# Statements that never belong in a query (a data-modifying CTE, say); the database's
# read-only mode below catches anything this misses.
_WRITE_WORDS: Final = re.compile(
    r"\b(insert|update|delete|drop|alter|create|truncate|grant|revoke|attach|detach|"
    r"vacuum|reindex|pragma|merge)\b",
    re.IGNORECASE,
)


def refusal(sql: str) -> str | None:
    """Why `sql` is refused, or None when it is a single read-only statement."""
    body = re.sub(r"'(?:[^']|'')*'", "''", sql)  # string literals may say anything
    body = re.sub(r"--[^\n]*|/\*.*?\*/", " ", body, flags=re.DOTALL).strip().rstrip(";")
    if ";" in body:
        return "only one statement is allowed"
    pragma = _PRAGMA.match(body)
    if pragma is not None:
        if pragma.group(1).lower() in _READ_ONLY_PRAGMAS:
            return None
        return f"PRAGMA {pragma.group(1)} is not one of the read-only PRAGMAs"
    if not _READ_ONLY_START.match(body):
        return "only SELECT (or WITH ... SELECT, EXPLAIN, VALUES) is allowed"
    word = _WRITE_WORDS.search(body)
    if word:
        return f"{word.group(0).upper()} is not allowed in a read-only query"
    return None


def _select(
    conn: Connection, sql: str, limit: int, timeout_s: float
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run `sql` under a database-enforced timeout; at most `limit + 1` rows are fetched."""
    sqlite = conn.dialect.name == "sqlite"
    deadline = time.monotonic() + timeout_s
    raw = conn.connection.driver_connection
    if sqlite:
        assert isinstance(raw, sqlite3.Connection)
        raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    else:
        conn.exec_driver_sql(f"SET statement_timeout = {max(int(timeout_s * 1000), 1)}")
    try:
        result = conn.exec_driver_sql(sql)
        rows = [tuple(row) for row in result.fetchmany(limit + 1)]
        columns = list(result.keys())
        result.close()
        return columns, rows
    except DBAPIError as error:
        reason = str(error.orig).strip().splitlines()[0] if error.orig else str(error)
        if "interrupted" in reason or "statement timeout" in reason:
            raise StoreTimeoutError(
                f"the query ran longer than {timeout_s:g} s and was stopped by the database "
                "(raise --timeout, or narrow it with WHERE / LIMIT)"
            ) from None
        raise QueryRejectedError(reason) from None
    finally:
        if sqlite:
            assert isinstance(raw, sqlite3.Connection)
            raw.set_progress_handler(None, 0)
        else:
            with contextlib.suppress(DBAPIError):
                conn.exec_driver_sql("RESET statement_timeout")


async def _run(
    url: str | None, config: Path | None, sql: str, redact: bool, limit: int, timeout_s: float
) -> tuple[list[str], list[tuple[Any, ...]], Redactor]:
    if not redact:
        await record_audit(url, config, [redaction_disabled_event()])
    async with open_store(url, config, read_only=True) as store:
        redactor = store.redactor if redact else Redactor(enabled=False)
        columns, rows = await store.read_snapshot(_select, sql, limit, timeout_s)
        return columns, rows, redactor


def query(
    sql: Annotated[str, typer.Argument(help="One read-only SQL statement.")],
    url: UrlOption = None,
    config: ConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="A JSON array of objects.")] = False,
    as_nl: Annotated[bool, typer.Option("--nl", help="One JSON object per line.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV.")] = False,
    as_tsv: Annotated[bool, typer.Option("--tsv", help="Tab-separated values.")] = False,
    headers: Annotated[
        bool, typer.Option("--headers/--no-headers", help="Print the column names.")
    ] = True,
    redact: Annotated[bool, typer.Option(help="Redact secrets in the output.")] = True,
    limit: Annotated[
        int,
        typer.Option(
            min=1, max=10_000_000, help="Print at most this many rows (a note says when cut)."
        ),
    ] = DEFAULT_LIMIT,
    timeout: Annotated[
        float,
        typer.Option(min=0.001, max=86_400, help="Seconds before the database stops the query."),
    ] = DEFAULT_TIMEOUT_S,
) -> None:
    """Run read-only SQL (SELECT ...) against the store; writes are refused."""
    chosen = [
        name
        for name, on in (("json", as_json), ("nl", as_nl), ("csv", as_csv), ("tsv", as_tsv))
        if on
    ]
    if len(chosen) > 1:
        raise typer.BadParameter(f"pick one output format, not {' and '.join(chosen)}")
    reason = refusal(sql)
    if reason is not None:
        raise typer.BadParameter(f"refused: {reason}", param_hint="SQL")
    try:
        columns, rows, redactor = asyncio.run(_run(url, config, sql, redact, limit, timeout))
    except QueryRejectedError as exc:  # the database's own words: no such table, a syntax error
        raise typer.BadParameter(
            f"the database rejected it: {exc}; `sessionstore schema` lists the tables "
            "(docs/SCHEMA.md describes them)",
            param_hint="SQL",
        ) from None
    if not redact:
        err_console.print(shown("warning: redaction is off; secrets are printed as stored", "red"))
    if len(rows) > limit:
        rows = rows[:limit]
        err_console.print(shown(f"note: stopped at --limit {limit} rows; raise it to see more"))
    if chosen:
        sys.stdout.write(render_text(columns, rows, chosen[0], headers, redactor))
    else:
        console.print(render_table(columns, rows, headers, redactor))
