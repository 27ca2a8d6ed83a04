"""Writes `_head_sql/*.sql` from databases migrated through the whole chain.

    python -m sessionstore._storage._head_schema_dump [--pg-url postgresql+asyncpg://...]

Run it after adding or changing a migration (tests/test_head_schema.py says so until it is
run). SQLite's DDL is read from `sqlite_master` (which keeps each statement's text as
written); PostgreSQL's is the schema statements the chain runs on a scratch database created
on the server at `--pg-url` (or $SESSIONSTORE_TEST_PG_URL).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import asyncpg
from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url

from ._database import open_database
from ._head_file import SEPARATOR, HeadSchema, head_sql_path, migrations_digest, render
from ._migrations import run_chain, upgrade_through_chain
from ._postgres._url import asyncpg_dsn
from ._revisions import chain_head_revision, script_location
from ._urls import resolve_url

_SQLITE_ORDER: Final = ("table", "index", "view", "trigger")
# Reads, data changes and transaction-local settings (maintenance's SET LOCAL): not schema.
_DATA_STATEMENTS: Final = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "SET"})


def sqlite_statements(connection: Connection) -> list[str]:
    """Every schema object's DDL, tables before what stands on them, each kind in the order
    it was created; SQLite's own objects and FTS5's shadow tables (the virtual table's
    statement creates them) left out."""
    shadows = {
        str(name)
        for _, name, kind, *_ in connection.exec_driver_sql("PRAGMA table_list")
        if kind == "shadow"
    }
    rows = connection.exec_driver_sql(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
    ).all()
    kept = [
        (str(kind), str(sql))
        for kind, name, sql in rows
        if not str(name).startswith("sqlite_") and name not in shadows
    ]
    return [sql for order in _SQLITE_ORDER for kind, sql in kept if kind == order]


def recorded_chain(connection: Connection) -> list[str]:
    """Run the whole chain on `connection`, returning the schema statements it executed, in
    order: reads and data changes (of tables empty on a new database) left out; a statement
    with parameters could not be replayed as text, so it fails here, not at replay."""
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        words = statement.split(None, 1)
        if words and words[0].upper() in _DATA_STATEMENTS:
            return
        if parameters:
            raise ValueError(f"a schema statement with parameters: {statement[:80]!r}")
        statements.append(statement.strip().removesuffix(";"))

    event.listen(connection, "before_cursor_execute", record)
    try:
        run_chain(connection)
    finally:
        event.remove(connection, "before_cursor_execute", record)
    return statements


async def _chain_migrated(url: str) -> None:
    database = open_database(resolve_url(url))
    try:
        await upgrade_through_chain(database)
    finally:
        await database.dispose()


async def sqlite_head(folder: Path) -> list[str]:
    """The statements of a new SQLite file in `folder` after the whole chain."""
    url = f"sqlite:///{folder / 'chain.db'}"
    await _chain_migrated(url)
    database = open_database(resolve_url(url))
    try:
        return await database.read(sqlite_statements)
    finally:
        await database.dispose()


def _dsn(url: str) -> str:
    return asyncpg_dsn(make_url(url))  # every host of a multi-host URL


@contextmanager
def scratch_pg_database(server_url: str) -> Iterator[str]:
    """A new, empty database on the server of `server_url`, dropped after."""
    name = f"sessionstore_head_{uuid.uuid4().hex[:12]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(_dsn(server_url), timeout=10)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _recorded(url: str) -> list[str]:
    database = open_database(resolve_url(url))
    try:
        return await database.write(recorded_chain)
    finally:
        await database.dispose()


def postgresql_head(server_url: str) -> list[str]:
    """The schema statements the chain runs on a new database on that server.

    Replayed rather than dumped: PostgreSQL keeps an expression as a parse tree, and the text
    it prints back (`kind IN (...)` as `= ANY (ARRAY[...])`) parses into another one, so a
    dump's catalog would differ from the chain's; the chain's own statements cannot."""
    with scratch_pg_database(server_url) as url:
        return asyncio.run(_recorded(url))


def head_schema_of(statements: list[str]) -> HeadSchema:
    """The head schema these statements build, at this code's head and migrations."""
    clashing = [text for text in statements if SEPARATOR.strip() in text]
    if clashing:
        raise ValueError(f"a statement contains the file's separator line: {clashing[0][:80]}")
    digest = migrations_digest(script_location() / "versions")
    return HeadSchema(chain_head_revision(), digest, tuple(statements))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pg-url",
        default=os.environ.get(
            "SESSIONSTORE_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
        ),
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = head_schema_of(asyncio.run(sqlite_head(Path(tmp))))
    postgresql = head_schema_of(postgresql_head(args.pg_url))
    for dialect, schema in (("sqlite", sqlite), ("postgresql", postgresql)):
        head_sql_path(dialect).parent.mkdir(exist_ok=True)
        head_sql_path(dialect).write_text(render(schema, dialect), encoding="utf-8")
        print(f"wrote {head_sql_path(dialect)} ({len(schema.statements)} statements)")


if __name__ == "__main__":
    main()
