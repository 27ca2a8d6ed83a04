"""The sessions of a SQLite file, listed with the standard library alone.

Opening a store loads SQLAlchemy, the schema and the kernel: about 0.8 s of a 1.5 s
`sessionstore sessions list` on a 2-core machine, for what is one SELECT. This reader
takes the plain case only: a file at the newest revision, opened read-only. Anything
else (a missing file, another revision, a lock, a damaged file) returns None and the
caller opens the store, which refuses or reads it exactly as every other command does.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any, Final, NamedTuple

from .._revisions import head_revision

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
        with closing(sqlite3.connect(f"{file.as_uri()}?mode=ro", uri=True)) as connection:
            revisions = connection.execute("SELECT version_num FROM alembic_version").fetchall()
            if revisions != [(head_revision(),)]:
                return None
            rows = connection.execute(_LIST_SQL, (limit + 1, offset)).fetchall()
            total = None
            if len(rows) > limit:
                total = connection.execute("SELECT count(*) FROM sessions").fetchone()[0]
            return SessionPage([_row(values) for values in rows[:limit]], total)
    except (sqlite3.Error, ValueError):  # no such table, a lock, a damaged file or time
        return None
