"""The standard-library listing of a SQLite file reads what the store reads, and answers
only when it can be sure: anything unusual is left to the store (None)."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from dataclasses import asdict, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import SessionStore
from sessionstore._rows import SessionInfo
from sessionstore._storage._revisions import head_revision
from sessionstore._storage._sqlite._quick_list import COLUMNS, quick_session_page
from tests.support.database import age, migrate_to
from tests.support.histories import user


def _file(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


async def _listed(store: SessionStore, limit: int, offset: int) -> list[dict[str, Any]]:
    return [asdict(info) for info in await store.list_sessions(limit=limit, offset=offset)]


def test_it_reads_every_field_of_session_info() -> None:
    assert tuple(field.name for field in fields(SessionInfo)) == COLUMNS


# A session: how many items, and how many minutes ago it was last updated (ties included).
_sessions = st.lists(
    st.tuples(st.integers(min_value=1, max_value=3), st.integers(min_value=0, max_value=3)),
    min_size=0,
    max_size=7,
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sessions=_sessions,
    limit=st.integers(min_value=1, max_value=8),
    offset=st.integers(min_value=0, max_value=3),
)
async def test_a_page_is_what_the_store_lists(
    tmp_path: Path, sessions: list[tuple[int, int]], limit: int, offset: int
) -> None:
    """Same sessions, same fields and values, same order (ties on updated_at included)."""
    url = f"sqlite:///{tmp_path / f'list-{abs(hash((str(sessions), limit, offset)))}.db'}"
    now = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    async with SessionStore(url, create_tables=True) as store:
        for index, (items, minutes) in enumerate(sessions):
            sid = f"s{index % 3}-{index}"
            await store.append(sid, [user(f"turn {n}") for n in range(items)])
            await age(store, sid, now - timedelta(minutes=minutes))
        if sessions:
            await store.fork("s0-0", "branch", at=1)
        expected = await _listed(store, limit, offset)
        everything = await store.list_sessions()
    page = quick_session_page(_file(url), limit=limit, offset=offset)
    assert page is not None
    assert page.sessions == expected
    cut = len(everything) > offset + limit
    assert page.total == (len(everything) if cut else None)


async def test_times_come_back_as_the_store_reads_them(sqlite_url: str) -> None:
    """Sub-second and whole-second stored times both parse, naive UTC as SQLAlchemy hands
    them back (the CLI prints them with their zone)."""
    async with SessionStore(sqlite_url, create_tables=True) as store:
        await store.append("a", [user("hi")])
        await store.append("b", [user("hi")])
        await age(store, "b", datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC))
        expected = await _listed(store, 10, 0)
    page = quick_session_page(_file(sqlite_url), limit=10)
    assert page is not None and page.sessions == expected
    assert {row["updated_at"].tzinfo for row in page.sessions} == {None}


async def test_reading_changes_nothing(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url, create_tables=True) as store:
        await store.append("a", [user("hi")])
    file = _file(sqlite_url)
    before = hashlib.sha256(file.read_bytes()).hexdigest()
    assert quick_session_page(file, limit=5) is not None
    assert hashlib.sha256(file.read_bytes()).hexdigest() == before


async def test_it_leaves_an_older_schema_to_the_store(sqlite_url: str) -> None:
    """The store refuses an old schema with its message; this reader must not list it."""
    await migrate_to(sqlite_url, "0019")  # an older revision
    assert quick_session_page(_file(sqlite_url), limit=5) is None


def _with_sql(path: Path, *statements: str) -> Path:
    with sqlite3.connect(path) as connection:
        for statement in statements:
            connection.execute(statement)
    connection.close()
    return path


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda path: path, id="no file"),
        pytest.param(lambda path: _with_sql(path), id="an empty SQLite file"),
        pytest.param(
            lambda path: (path.write_bytes(b"not a database, just text" * 100), path)[1],
            id="not a SQLite file",
        ),
        pytest.param(
            lambda path: _with_sql(
                path,
                "CREATE TABLE alembic_version (version_num TEXT)",
                "INSERT INTO alembic_version VALUES ('0020'), ('0019')",
            ),
            id="two revisions",
        ),
        pytest.param(
            lambda path: _with_sql(
                path,
                "CREATE TABLE alembic_version (version_num TEXT)",
                f"INSERT INTO alembic_version VALUES ('{head_revision()}')",
            ),
            id="the revision without the tables",
        ),
        pytest.param(lambda path: path.parent, id="a directory"),
    ],
)
def test_anything_unusual_is_left_to_the_store(tmp_path: Path, make: Any) -> None:
    assert quick_session_page(make(tmp_path / "odd.db"), limit=5) is None


@pytest.mark.parametrize("table", ["events", "messages", "message_search"])
async def test_a_table_dropped_by_hand_is_left_to_the_store(sqlite_url: str, table: str) -> None:
    """Stamped at the newest revision is not enough: the store reports what is missing."""
    async with SessionStore(sqlite_url, create_tables=True) as store:
        await store.append("a", [user("hi")])
    _with_sql(_file(sqlite_url), f"DROP TABLE {table}")
    assert quick_session_page(_file(sqlite_url), limit=5) is None


async def test_a_file_locked_by_another_connection_is_not_waited_for(sqlite_url: str) -> None:
    """The store waits for a lock, and says so; the quick read leaves it at once."""
    async with SessionStore(sqlite_url, create_tables=True) as store:
        await store.append("a", [user("hi")])
    holder = sqlite3.connect(_file(sqlite_url), isolation_level=None)
    try:
        holder.execute("PRAGMA journal_mode = DELETE")
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        started = time.monotonic()
        assert quick_session_page(_file(sqlite_url), limit=5) is None
        assert time.monotonic() - started < 4  # not a speed bound: sqlite3 would wait 5 s
    finally:
        holder.execute("ROLLBACK")
        holder.close()


async def test_a_file_another_connection_is_writing_is_still_read(sqlite_url: str) -> None:
    """WAL: a reader sees the last commit while a write transaction is open."""
    async with SessionStore(sqlite_url, create_tables=True) as store:
        await store.append("a", [user("hi")])
    writer = sqlite3.connect(_file(sqlite_url), isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE sessions SET context_items = 99")
        page = quick_session_page(_file(sqlite_url), limit=5)
        assert page is not None and [row["context_items"] for row in page.sessions] == [1]
    finally:
        writer.execute("ROLLBACK")
        writer.close()
