"""`sessionstore query`: read-only SQL over the documented schema.

Four guards: the statement must pass `_query_guard` (one SELECT over the documented tables,
parsed by a real SQL parser; what runs is the parser's re-printing of what it checked); the
store is opened read-only (SQLite `mode=ro`, PostgreSQL READ ONLY transactions), so the
database refuses a write even if the first check were fooled; a timeout the database
enforces (SQLite: a progress handler; PostgreSQL: statement_timeout) stops a
runaway query, and SQLite's heap is capped; on PostgreSQL, `--role` (or the config's
`query.role`) runs it as a least-privileged role (`sessionstore migrate --query-role`).
At most `--limit` rows are held.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Final

import typer
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from .._errors import QueryRejectedError, StoreTimeoutError
from .._migrations import QUERY_ROLE_NAME
from .._redaction import Redactor, redaction_disabled_event
from ._common import (
    ConfigOption,
    RedactOption,
    UrlOption,
    console,
    err_console,
    open_store,
    record_audit,
)
from ._query_output import render_table, render_text
from ._text import shown

DEFAULT_LIMIT: Final = 10_000
_UNWRAPPED_WIDTH: Final = 1_000_000  # wide enough that no stored cell is wrapped or cut
DEFAULT_TIMEOUT_S: Final = 30.0
SQLITE_HEAP_LIMIT: Final = 512 * 1024 * 1024  # bytes; a query that needs more is stopped


def _select(
    conn: Connection, sql: str, limit: int, timeout_s: float, role: str | None
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Vet `sql`, then run it under the database's guards; at most `limit + 1` rows fetched."""
    from ._query_guard import vetted  # the SQL parser loads only for this command

    sqlite = conn.dialect.name == "sqlite"
    statement = vetted(sql, conn.dialect.name)
    deadline = time.monotonic() + timeout_s
    raw = conn.connection.driver_connection
    heap_before = 0
    if sqlite:
        assert isinstance(raw, sqlite3.Connection)
        raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        heap_before = raw.execute("PRAGMA hard_heap_limit").fetchone()[0]
        raw.execute(f"PRAGMA hard_heap_limit = {SQLITE_HEAP_LIMIT}")
    else:
        # Reads run in autocommit, where SET LOCAL does nothing: set, then reset below (a
        # connection whose reset fails is discarded by the store, never pooled again).
        conn.exec_driver_sql(f"SET statement_timeout = {max(int(timeout_s * 1000), 1)}")
        if role is not None:
            conn.exec_driver_sql(f'SET ROLE "{role}"')
    try:
        result = conn.exec_driver_sql(statement)
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
        raise QueryRejectedError(
            f"the database rejected it: {reason}; `sessionstore schema` lists the tables "
            "(docs/SCHEMA.md describes them)"
        ) from None
    finally:
        if sqlite:
            assert isinstance(raw, sqlite3.Connection)
            raw.set_progress_handler(None, 0)
            raw.execute(f"PRAGMA hard_heap_limit = {int(heap_before)}")
        else:
            conn.exec_driver_sql("RESET ROLE")
            conn.exec_driver_sql("RESET statement_timeout")


async def _run(
    url: str | None,
    config: Path | None,
    sql: str,
    redact: bool,
    limit: int,
    timeout_s: float,
    role: str | None = None,
) -> tuple[list[str], list[tuple[Any, ...]], Redactor]:
    if not redact:
        await record_audit(url, config, [redaction_disabled_event()])
    async with open_store(url, config, read_only=True) as store:
        if role is not None and store.engine.dialect.name != "postgresql":
            raise typer.BadParameter("roles are PostgreSQL's; SQLite has none", param_hint="--role")
        redactor = store.redactor if redact else Redactor(enabled=False)
        columns, rows = await store.read_snapshot(_select, sql, limit, timeout_s, role)
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
    redact: RedactOption = True,
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
    role: Annotated[
        str | None,
        typer.Option(
            envvar="SESSIONSTORE_QUERY_ROLE",
            help="PostgreSQL: run as this read-only role (`sessionstore migrate --query-role`).",
        ),
    ] = None,
) -> None:
    """Run read-only SQL (SELECT ...) against the store; writes are refused."""
    chosen = [
        name
        for name, on in (("json", as_json), ("nl", as_nl), ("csv", as_csv), ("tsv", as_tsv))
        if on
    ]
    if len(chosen) > 1:
        raise typer.BadParameter(f"pick one output format, not {' and '.join(chosen)}")
    if role is not None and not QUERY_ROLE_NAME.match(role):
        raise typer.BadParameter(
            "a role name is lower-case letters, digits and _ (as `migrate --query-role` makes)",
            param_hint="--role",
        )
    try:
        columns, rows, redactor = asyncio.run(_run(url, config, sql, redact, limit, timeout, role))
    except QueryRejectedError as exc:  # refused by the guard, or the database's own words
        raise typer.BadParameter(str(exc), param_hint="SQL") from None
    if not redact:
        err_console.print(shown("warning: redaction is off; secrets are printed as stored", "red"))
    if len(rows) > limit:
        rows = rows[:limit]
        err_console.print(shown(f"note: stopped at --limit {limit} rows; raise it to see more"))
    if chosen:
        sys.stdout.write(render_text(columns, rows, chosen[0], headers, redactor))
    else:
        console.print(render_table(columns, rows, headers, redactor))
