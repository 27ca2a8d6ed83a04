"""`sessionstore query`: read-only SQL over the documented schema.

Two guards: the statement must be a single SELECT (or WITH ... SELECT / EXPLAIN),
and it runs in a read-only transaction (PostgreSQL) or with `PRAGMA query_only`
(SQLite), so the database refuses a write even if the first check were fooled.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Annotated, Any, Final

import sqlalchemy as sa
import typer
from rich.table import Table
from sqlalchemy.exc import DBAPIError

from .common import ConfigOption, UrlOption, console, open_store

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
    url: str | None, config: Path | None, sql: str
) -> tuple[list[str], list[tuple[Any, ...]]]:
    async with open_store(url, config) as store, store.engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(sa.text("SET TRANSACTION READ ONLY"))
        else:
            await conn.exec_driver_sql("PRAGMA query_only = ON")
        try:
            result = await conn.execute(sa.text(sql))
            return list(result.keys()), [tuple(row) for row in result.all()]
        finally:
            if conn.dialect.name == "sqlite":
                await conn.exec_driver_sql("PRAGMA query_only = OFF")
            await conn.rollback()


def query(
    sql: Annotated[str, typer.Argument(help="One read-only SQL statement.")],
    url: UrlOption = None,
    config: ConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON rows.")] = False,
) -> None:
    """Run read-only SQL (SELECT ...) against the store; writes are refused."""
    reason = refusal(sql)
    if reason is not None:
        raise typer.BadParameter(f"refused: {reason}", param_hint="SQL")
    try:
        columns, rows = asyncio.run(_run(url, config, sql))
    except DBAPIError as exc:  # the database's own words: no such table, a syntax error, ...
        raise typer.BadParameter(
            f"the database rejected it: {exc.orig}; `sessionstore query` reads the tables in "
            "docs/SCHEMA.md",
            param_hint="SQL",
        ) from None
    if as_json:
        console.print_json(
            json.dumps([dict(zip(columns, row, strict=True)) for row in rows], default=str)
        )
        return
    table = Table(title=f"{len(rows)} row(s)")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if value is None else str(value) for value in row))
    console.print(table)
