"""`sessionstore query`: read-only SQL over the documented schema.

Two guards: the statement must be a single SELECT (or WITH ... SELECT / EXPLAIN),
and it runs in a read-only transaction (PostgreSQL) or with `PRAGMA query_only`
(SQLite), so the database refuses a write even if the first check were fooled.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Final

import sqlalchemy as sa
import typer
from rich.console import Console
from sqlalchemy.exc import DBAPIError

from ..errors import SessionStoreError
from ..redaction import Redactor, redaction_disabled_event
from .common import ConfigOption, UrlOption, console, err_console, open_store
from .query_output import render_table, render_text

DEFAULT_LIMIT: Final = 10_000
_UNWRAPPED_WIDTH: Final = 1_000_000  # wide enough that no stored cell is wrapped or cut
_READ_ONLY_START: Final = re.compile(r"^\s*(select|with|explain|values)\b", re.IGNORECASE)
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
    if not _READ_ONLY_START.match(body):
        return "only SELECT (or WITH ... SELECT, EXPLAIN, VALUES) is allowed"
    word = _WRITE_WORDS.search(body)
    if word:
        return f"{word.group(0).upper()} is not allowed in a read-only query"
    return None


async def _run(
    url: str | None, config: Path | None, sql: str, redact: bool, limit: int
) -> tuple[list[str], list[tuple[Any, ...]], Redactor]:
    async with open_store(url, config) as store:
        if not redact:
            try:  # the audit trail must never make a read fail (a read-only file, say)
                await store.record_events([redaction_disabled_event()])
            except (SessionStoreError, DBAPIError, OSError):
                err_console.print("warning: could not record the --no-redact audit event")
        redactor = store.redactor if redact else Redactor(enabled=False)
        async with store.engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                await conn.execute(sa.text("SET TRANSACTION READ ONLY"))
            else:
                await conn.exec_driver_sql("PRAGMA query_only = ON")
            try:
                result = await conn.stream(sa.text(sql))  # a cursor: only `limit + 1` rows held
                rows = [tuple(row) for row in await result.fetchmany(limit + 1)]
                await result.close()
                return list(result.keys()), rows, redactor
            finally:
                if conn.dialect.name == "sqlite":
                    await conn.exec_driver_sql("PRAGMA query_only = OFF")
                await conn.rollback()


def _table_console() -> Console:
    """The terminal's console; for a pipe or file, one that never wraps, cuts or colours."""
    if sys.stdout.isatty():
        return console
    return Console(width=_UNWRAPPED_WIDTH, color_system=None, highlight=False)


@contextmanager
def _quiet_on_closed_pipe() -> Iterator[None]:
    """A reader that went away (`| head -1`) ends the command quietly with exit 0."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(0) from None


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
        int, typer.Option(min=1, help="Print at most this many rows (a note says when cut).")
    ] = DEFAULT_LIMIT,
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
        columns, rows, redactor = asyncio.run(_run(url, config, sql, redact, limit))
    except DBAPIError as exc:  # the database's own words: no such table, a syntax error, ...
        raise typer.BadParameter(
            f"the database rejected it: {exc.orig}; `sessionstore query` reads the tables in "
            "docs/SCHEMA.md",
            param_hint="SQL",
        ) from None
    if not redact:
        err_console.print("warning: redaction is off; secrets are printed as stored")
    if len(rows) > limit:
        rows = rows[:limit]
        err_console.print(f"note: stopped at --limit {limit} rows; raise it to see more")
    with _quiet_on_closed_pipe():
        if chosen:
            sys.stdout.write(render_text(columns, rows, chosen[0], headers, redactor))
        else:
            _table_console().print(render_table(columns, rows, headers, redactor))
