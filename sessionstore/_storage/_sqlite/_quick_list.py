"""The sessions of a SQLite file, listed with the standard library alone.

Opening a store loads SQLAlchemy, the schema and the kernel: about 0.8 s of a 1.5 s
`sessionstore sessions list` on a 2-core machine, for what is one SELECT. This reader
takes the plain case only: a file at the newest revision, opened read-only. Anything
else (a missing file, another revision, a lock, a damaged file) returns None and the
caller opens the store, which refuses or reads it exactly as every other command does.
"At the newest revision" means stamped so and holding every table and column the head
schema builds (a table dropped by hand is the store's to report); and a file another
connection locks is not waited for here (the store waits, and says so).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, Final, NamedTuple

from .._head_file import head_schema
from .._revisions import head_revision, script_location

# SessionInfo's fields (tests/storage/sqlite/test_quick_list.py holds them equal), read
# in the order and with the tie-break SessionStore.list_sessions uses.
COLUMNS: Final = (
    "session_id",
    "created_at",
    "updated_at",
    "last_seq",
    "context_start_seq",
    "context_tokens",
    "context_items",
    "compaction_count",
    "token_encoding",
    "parent_session_id",
    "fork_seq",
)
_TIMES: Final = frozenset({"created_at", "updated_at"})
_LIST_SQL: Final = (
    f"SELECT {', '.join(COLUMNS)} FROM sessions "
    "ORDER BY updated_at DESC, session_id LIMIT ? OFFSET ?"
)


_TABLES_SQL: Final = (
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
)


def _columns(connection: sqlite3.Connection) -> dict[str, frozenset[str]]:
    """Each table of the database and its columns."""
    names = [row[0] for row in connection.execute(_TABLES_SQL)]
    return {
        name: frozenset(row[1] for row in connection.execute(f'PRAGMA table_info("{name}")'))
        for name in names
    }


@cache
def _head_columns() -> dict[str, frozenset[str]] | None:
    """The tables and columns the packaged head schema builds (on a scratch in-memory
    database, a few milliseconds), or None when that file does not match the migrations."""
    schema = head_schema("sqlite", script_location() / "versions")
    if schema is None:
        return None
    with closing(sqlite3.connect(":memory:")) as scratch:
        for statement in schema.statements:
            scratch.execute(statement)
        return _columns(scratch)


def _at_head(connection: sqlite3.Connection) -> bool:
    revisions = connection.execute("SELECT version_num FROM alembic_version").fetchall()
    expected = _head_columns()
    if revisions != [(head_revision(),)] or expected is None:
        return False
    found = _columns(connection)
    return all(name in found and columns <= found[name] for name, columns in expected.items())


class SessionPage(NamedTuple):
    """Up to `limit` sessions, most recently updated first, as SessionInfo's fields; and
    how many sessions there are in all when the page did not hold them all."""

    sessions: list[dict[str, Any]]
    total: int | None


def _stored_time(text: str) -> datetime:
    """A time as SQLite keeps it (`YYYY-MM-DD HH:MM:SS[.ffffff]`, UTC, no zone)."""
    return datetime.fromisoformat(text)


def _row(values: tuple[Any, ...]) -> dict[str, Any]:
    return {
        name: _stored_time(value) if name in _TIMES else value
        for name, value in zip(COLUMNS, values, strict=True)
    }


def quick_session_page(path: Path, *, limit: int, offset: int = 0) -> SessionPage | None:
    """The sessions of the SQLite file at `path`, or None when only the store can say
    (see the module's docstring)."""
    file = path.resolve()
    if not file.is_file():
        return None
    try:
        opened = sqlite3.connect(f"{file.as_uri()}?mode=ro", uri=True, timeout=0)
        with closing(opened) as connection:
            if not _at_head(connection):
                return None
            rows = connection.execute(_LIST_SQL, (limit + 1, offset)).fetchall()
            total = None
            if len(rows) > limit:
                total = connection.execute("SELECT count(*) FROM sessions").fetchone()[0]
            return SessionPage([_row(values) for values in rows[:limit]], total)
    except (sqlite3.Error, ValueError):  # no such table, a lock, a damaged file or time
        return None
