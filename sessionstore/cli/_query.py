"""`sessionstore query`: read-only SQL over the documented schema.

Four guards: the statement must pass `_query_guard` (one SELECT over the documented tables,
every table reference resolved in its own scope, parsed by a real SQL parser; what runs is
the parser's re-printing of what it checked); the store is opened read-only (SQLite
`mode=ro`, PostgreSQL READ ONLY transactions), so the database refuses a write even if the
first check were fooled; bounds: a timeout the database enforces (SQLite: a progress
handler; PostgreSQL: statement_timeout) stops a runaway query, SQLite's heap is capped and
no SQLite value may pass MAX_RESULT_BYTES, rows are streamed and at most `--limit` rows and
MAX_RESULT_BYTES are held; on PostgreSQL, `--role` (or the config's `query.role`) runs it
as a least-privileged role (`sessionstore migrate --query-role`). A statement that is
refused or fails is one line, never a traceback.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Annotated, Any, Final

import asyncpg
import typer
from sqlalchemy.engine import Connection, CursorResult
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from .._errors import QueryRejectedError, QueryTooLargeError, StoreTimeoutError
from .._redaction import Redactor, redaction_disabled_event
from .._storage._migrations import QUERY_ROLE_NAME
from ._common import (
    ConfigOption,
    RedactOption,
    UrlOption,
    console,
    err_console,
    open_store,
    record_audit,
)
from ._output import CsvFlag, JsonFlag, NlFlag, TsvFlag, chosen_format, note_cut, write_text
from ._query_output import render_table, render_text
from ._text import shown

DEFAULT_LIMIT: Final = 10_000
DEFAULT_TIMEOUT_S: Final = 30.0
SQLITE_HEAP_LIMIT: Final = 512 * 1024 * 1024  # bytes; a query that needs more is stopped
# The most a result may hold, counted as rows arrive (text as UTF-8, BLOBs as bytes). On
# SQLite it is also the longest value the database will build (SQLITE_LIMIT_LENGTH), so a
# huge printf()/group_concat() fails inside SQLite, before it reaches the heap cap.
MAX_RESULT_BYTES: Final = 64 * 1024 * 1024
_BATCH: Final = 500  # rows fetched at a time, from a server-side cursor on PostgreSQL
_SCALAR_SIZE: Final = 16  # what a number, a date or a NULL counts for
_MIB: Final = 1024 * 1024


def _too_large(what: str) -> QueryTooLargeError:
    return QueryTooLargeError(f"{what}; narrow it with WHERE / LIMIT, or select fewer columns")


def _size(value: Any) -> int:
    """The bytes a fetched value holds, near enough to bound a result."""
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode("utf-8", "replace"))
    if isinstance(value, bytes | bytearray | memoryview):
        return len(value)
    if isinstance(value, dict | list):
        return len(str(value))
    return _SCALAR_SIZE


def _fetch(
    result: CursorResult[Any], limit: int, deadline: float, timeout_s: float
) -> list[tuple[Any, ...]]:
    """At most `limit + 1` rows, streamed and counted as they arrive: past MAX_RESULT_BYTES
    (or the deadline, between batches) it stops instead of holding more."""
    rows: list[tuple[Any, ...]] = []
    held = 0
    while len(rows) <= limit:
        batch = result.fetchmany(min(_BATCH, limit + 1 - len(rows)))
        if not batch:
            break
        for row in batch:
            held += sum(_size(value) for value in row)
            if held > MAX_RESULT_BYTES:
                raise _too_large(
                    f"the result passed the {MAX_RESULT_BYTES // _MIB} MiB `query` holds "
                    f"(at row {len(rows) + 1:,})"
                )
            rows.append(tuple(row))
        if time.monotonic() > deadline:
            raise _timed_out(timeout_s)
    return rows


def _timed_out(timeout_s: float) -> StoreTimeoutError:
    return StoreTimeoutError(
        f"the query ran longer than {timeout_s:g} s and was stopped by the database "
        "(raise --timeout, or narrow it with WHERE / LIMIT)"
    )


def _select(
    conn: Connection, sql: str, limit: int, timeout_s: float, role: str | None
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Vet `sql`, then run it under the database's guards; at most `limit + 1` rows fetched."""
    from ._query_guard import vetted, written_names  # the parser loads for this command only

    sqlite = conn.dialect.name == "sqlite"
    statement = vetted(sql, conn.dialect.name)
    deadline = time.monotonic() + timeout_s
    raw = conn.connection.driver_connection
    length_before = 0
    if sqlite:
        assert isinstance(raw, sqlite3.Connection)
        raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        # The heap cap is the process's (SQLite's is global) and can only be lowered: it
        # stays for the rest of this process (a CLI command), never raised above the cap.
        if raw.execute("PRAGMA hard_heap_limit").fetchone()[0] not in range(1, SQLITE_HEAP_LIMIT):
            raw.execute(f"PRAGMA hard_heap_limit = {SQLITE_HEAP_LIMIT}")
        length_before = raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_RESULT_BYTES)
    else:
        # Reads run in autocommit: this transaction is the statement's own (a server-side
        # cursor needs one), its settings are LOCAL and end with it.
        conn.exec_driver_sql("BEGIN READ ONLY")
        conn.exec_driver_sql(f"SET LOCAL statement_timeout = {max(int(timeout_s * 1000), 1)}")
        conn.exec_driver_sql("SET LOCAL standard_conforming_strings = on")  # as re-printed
        if role is not None:
            conn.exec_driver_sql(f'SET LOCAL ROLE "{role}"')
    try:
        result = conn.exec_driver_sql(
            statement, execution_options={"stream_results": True, "max_row_buffer": _BATCH}
        )
        try:
            if not result.returns_rows:
                raise QueryRejectedError("refused: the statement returns no rows to show")
            names = written_names(sql, conn.dialect.name, list(result.keys()))
            return names, _fetch(result, limit, deadline, timeout_s)
        finally:
            if sqlite:  # a stopped SQLite statement lets go of the file now, not when collected
                result.close()
    except (DBAPIError, asyncpg.PostgresError) as error:
        # asyncpg's errors while a server-side cursor fetches reach us unwrapped.
        orig = error.orig if isinstance(error, DBAPIError) else error
        reason = (str(orig).strip() or type(orig).__name__).splitlines()[0]
        if "interrupted" in reason or "statement timeout" in reason:
            raise _timed_out(timeout_s) from None
        if "too big" in reason:  # SQLITE_LIMIT_LENGTH: a value longer than the bound
            raise _too_large(
                f"a value passed the {MAX_RESULT_BYTES // _MIB} MiB `query` allows one value"
            ) from None
        raise QueryRejectedError(
            f"the database rejected it: {reason}; `sessionstore schema` lists the tables "
            "(docs/SCHEMA.md describes them)"
        ) from None
    except MemoryError:  # SQLite's heap cap, or this process: one line, not a traceback
        raise _too_large(
            "the query needed more memory than it may use "
            f"(SQLite's heap: {SQLITE_HEAP_LIMIT // _MIB} MiB)"
        ) from None
    except SQLAlchemyError as error:  # anything else the driver layer says: its first line
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise QueryRejectedError(f"the statement cannot be read as a result: {first}") from None
    finally:
        if sqlite:
            assert isinstance(raw, sqlite3.Connection)
            raw.set_progress_handler(None, 0)
            raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, length_before)
        else:
            conn.exec_driver_sql("ROLLBACK")


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
    as_json: JsonFlag = False,
    as_nl: NlFlag = False,
    as_csv: CsvFlag = False,
    as_tsv: TsvFlag = False,
    headers: Annotated[
        bool,
        typer.Option("--headers/--no-headers", help="Print the column names.", show_default=True),
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
    fmt = chosen_format(as_json, as_nl, as_csv, as_tsv)
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
        note_cut(limit, None, "rows")
    if fmt == "table":
        console.print(render_table(columns, rows, headers, redactor))
    else:
        write_text(render_text(columns, rows, fmt, headers, redactor))
