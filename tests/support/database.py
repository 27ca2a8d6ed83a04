"""Plain SQL over a store's tables, as an analyst or a test would run it."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import TypeVar

import asyncpg
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sessionstore import SessionStore
from sessionstore._schema import archives, events, messages, sessions
from sessionstore._storage._append_only import maintenance
from sessionstore._storage._database import Database, open_database
from sessionstore._storage._migrations import downgrade, upgrade
from sessionstore._storage._urls import resolve_url

_T = TypeVar("_T")

# Every table, children before parents (the order deletes must take).
TABLES = (
    "compaction_leases",
    "events",
    "model_calls",
    "archive_ranges",
    "archives",
    "compactions",
    "messages",
    "sessions",
    "retention_policies",
    "maintenance_roles",
)


async def scalar(store: SessionStore, sql: str, **params: object) -> object:
    """Run plain SQL through the store's public AsyncEngine (what an analyst would do)."""
    async with store.engine.connect() as conn:
        return (await conn.execute(sa.text(sql), params)).scalar()


async def edit_rows(store: SessionStore, *statements: sa.Executable) -> None:
    """Change stored message rows as an operator with maintenance rights could (tampering,
    ageing): the append-only triggers refuse it to anyone else."""

    def run(conn: Connection) -> None:
        with maintenance(conn):
            for statement in statements:
                conn.execute(statement)

    async with store.engine.begin() as conn:
        await conn.run_sync(run)


@contextlib.asynccontextmanager
async def _as_it_is(url: str) -> AsyncIterator[Database]:
    """The database at `url` at whatever revision it is (a store would refuse an old one, or
    migrate it), disposed after."""
    database = open_database(resolve_url(url))
    try:
        yield database
    finally:
        await database.dispose()


async def read_as_it_is(url: str, fn: Callable[[Connection], _T]) -> _T:
    """`fn(connection)` on the database at `url`, whatever its revision."""
    async with _as_it_is(url) as database:
        return await database.read(fn)


async def write_as_it_is(url: str, fn: Callable[[Connection], _T]) -> _T:
    """`fn(connection)` in a write transaction on the database at `url`, whatever its
    revision."""
    async with _as_it_is(url) as database:
        return await database.write(fn)


def creations_and_sessions(url: str) -> tuple[int, int]:
    """(schema creations or migrations recorded, sessions stored) in the database at `url`:
    stores racing on a new file must create its schema once and lose no session."""

    async def count() -> tuple[int, int]:
        async with SessionStore(url) as store, store.engine.connect() as conn:
            created = await conn.scalar(
                sa.text("SELECT count(*) FROM events WHERE event = 'schema.migrated'")
            )
            stored = await conn.scalar(sa.text("SELECT count(*) FROM sessions"))
            return int(created or 0), int(stored or 0)

    return asyncio.run(count())


async def migrate_to(url: str, revision: str, *, down: bool = False) -> None:
    """Upgrade (or with `down`, downgrade) the database at `url` to `revision`."""
    async with _as_it_is(url) as database:
        await (downgrade(database, revision) if down else upgrade(database, revision))


async def age(store: SessionStore, session_id: str, when: datetime) -> None:
    """Make a session's rows, bookkeeping, archives and events look written at `when`."""
    await edit_rows(
        store, messages.update().where(messages.c.session_id == session_id).values(created_at=when)
    )
    async with store.engine.begin() as conn:
        await conn.execute(
            sessions.update().where(sessions.c.session_id == session_id).values(updated_at=when)
        )
        await conn.execute(
            archives.update().where(archives.c.session_id == session_id).values(created_at=when)
        )
        await conn.execute(events.update().where(events.c.session_id == session_id).values(ts=when))


@contextlib.asynccontextmanager
async def write_lock_held(store: SessionStore, session_id: str) -> AsyncIterator[None]:
    """Another process holding what a write to `session_id` must take until the block exits:
    SQLite's write lock, or the session's row on PostgreSQL."""
    url = store.database.url
    if url.get_backend_name() == "sqlite":
        other = sqlite3.connect(url.database or "", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            other.execute("ROLLBACK")
            other.close()
        return
    conn = await asyncpg.connect(url.set(drivername="postgresql").render_as_string(False))
    try:
        async with conn.transaction():
            await conn.execute(
                "SELECT 1 FROM sessions WHERE session_id = $1 FOR UPDATE", session_id
            )
            yield
    finally:
        await conn.close()
