"""The SQLite runner: one writer thread and a small reader pool over one file."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Final, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from ..._errors import (
    DatabaseNotFoundError,
    StoreError,
    StoreTimeoutError,
)
from ..._loops import PerLoop
from ..._rows import Batch
from ..._security._payload_sealing import SessionKeys
from .._append_only import register as register_maintenance
from .._append_rows import (
    ActiveRow,
    sqlite_active_rows,
    sqlite_append,
)
from .._call_record import CallRecord, sqlite_record_call
from .._driver_errors import translate
from .._known_totals import KnownTotals
from .._outcomes import DEFAULT_TIMEOUT_S, check_writable, on_thread, outcome_of, written_session
from .._telemetry import is_telemetry
from .._urls import is_memory_sqlite, sqlite_url_of
from ._group_commit import GroupCommit
from ._idle_indexing import IdleIndexer
from ._search_index import index_pending
from ._wal import enter_wal
from ._writer_thread import WriterThread

# Execution option naming how a SQLite transaction begins: "IMMEDIATE" takes the
# write lock up front (no read->write upgrade deadlocks), "DEFERRED" is a plain
# snapshot, None runs each statement on its own (single-statement reads).
SQLITE_BEGIN: Final = "sqlite_begin"
_SQLITE_READERS: Final = 4
_T = TypeVar("_T")


class SQLiteDatabase:
    """SQLite: one hop to a worker thread per transaction.

    All writes run on one thread over one persistent connection: SQLite allows a
    single writer anyway, so queueing in-process is cheaper than spinning on the
    file lock. Reads use a small pool (WAL lets them run beside the writer).
    """

    dialect = "sqlite"

    def __init__(
        self,
        url: URL,
        *,
        busy_timeout_ms: int,
        synchronous: str,
        user_engine: AsyncEngine | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        read_only: bool = False,
        **kwargs: Any,
    ):
        if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
            raise ValueError("sqlite_synchronous must be OFF, NORMAL, FULL or EXTRA")
        self._memory = is_memory_sqlite(url)
        self.read_only = read_only and not self._memory
        self._where = url.render_as_string(hide_password=True)  # as the user wrote it
        self._file = url.database
        if not self._memory:
            refuse_a_directory(Path(url.database or ""))
        if self.read_only:
            url = read_only_sqlite_url(url)
        self.url = url
        kwargs.setdefault("connect_args", {"check_same_thread": False})
        # Whether a caller's thread may use the writer's connection while it idles.
        self._lendable = kwargs["connect_args"].get("check_same_thread", True) is False
        self._writer_engine: Engine = sa.create_engine(
            url, poolclass=StaticPool, pool_reset_on_return=None, **kwargs
        )
        configure_sqlite(self._writer_engine, busy_timeout_ms, synchronous, timeout_s=timeout_s)
        self._writer = WriterThread("sessionstore-sqlite-writer")
        self._writer_conn: Connection | None = None
        # Appends queued at the same moment commit together (one fsync for all of them).
        self._appends: GroupCommit[list[int]] = GroupCommit(
            self._writer,
            self._writer_driver_connection,
            sqlite_append,
            partial(self._translated, writing=True),
        )
        # So do model calls' records (a job of their own kind: they add no messages rows).
        # A record is telemetry, not conversation: its commit does not wait for the disk
        # (WAL, synchronous=NORMAL): a crash of the process loses nothing, a power loss at
        # most the records since the last append, whose own fsync covers them too.
        level = synchronous.upper()
        self._relaxed = ("NORMAL", level) if level in {"FULL", "EXTRA"} else None
        self._records: GroupCommit[tuple[int | None, int]] = GroupCommit(
            self._writer,
            self._writer_driver_connection,
            sqlite_record_call,
            partial(self._translated, writing=True),
            relaxed=self._relaxed,
        )
        # The full-text index is brought up to date off the append path (migration 0014).
        self._indexer = IdleIndexer(self._index_and_wait)
        self._totals = KnownTotals()  # what the pre-flight may decide from without a read
        weakref.finalize(self, self._indexer.stop)  # a store nobody closed: end its thread
        if self._memory:
            # One shared in-memory connection must never be used by two threads at once.
            self.engine = self._writer_engine
            self._readers: Executor = self._writer
        else:
            self.engine = sa.create_engine(url, **kwargs)
            configure_sqlite(
                self.engine,
                busy_timeout_ms,
                synchronous,
                read_only=self.read_only,
                timeout_s=timeout_s,
            )
            self._readers = ThreadPoolExecutor(
                _SQLITE_READERS, thread_name_prefix="sessionstore-sqlite-reader"
            )
        self._busy_timeout_s = busy_timeout_ms / 1000
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._checkpoint_pages: int | None = None  # the writer connection's WAL auto-checkpoint
        self._user_engine = user_engine
        # aiosqlite engines (ad-hoc SQL) run their futures on the loop that opened them.
        self._async_engines: PerLoop[AsyncEngine] = PerLoop(
            self._ad_hoc_engine,
            AsyncEngine.dispose,
            lambda engine: engine.sync_engine.dispose(close=False),
        )

    def _ad_hoc_engine(self) -> AsyncEngine:
        engine = create_async_engine(self.url.set(drivername="sqlite+aiosqlite"))

        @event.listens_for(engine.sync_engine, "connect")
        def _on_connect(dbapi_connection: Any, record: Any) -> None:
            register_maintenance(dbapi_connection, record.info)  # a clear append-only refusal

        return engine

    def _writer_connection(self) -> Connection:
        """The writer thread's one persistent connection (only ever touched on that thread)."""
        if self._writer_conn is None:
            self._writer_conn = self._writer_engine.connect().execution_options(
                **{SQLITE_BEGIN: "IMMEDIATE"}
            )
        return self._writer_conn

    def _write_sync(self, fn: Callable[..., _T], args: tuple[Any, ...], kw: dict[str, Any]) -> _T:
        conn = self._writer_connection()
        with self._translated(writing=True), self._relaxed_for(fn), conn.begin():
            return fn(conn, *args, **kw)

    @contextlib.contextmanager
    def _relaxed_for(self, fn: Callable[..., Any]) -> Iterator[None]:
        """A telemetry write commits at the relaxed level (_telemetry.py), any other as set."""
        if self._relaxed is None or not is_telemetry(fn):
            yield
            return
        relaxed, own = self._relaxed
        raw = self._writer_driver_connection()
        raw.execute(f"PRAGMA synchronous = {relaxed}")
        try:
            yield
        finally:
            raw.execute(f"PRAGMA synchronous = {own}")

    def _writer_driver_connection(self) -> sqlite3.Connection:
        """The writer connection's sqlite3 connection, outside any SQLAlchemy transaction."""
        conn = self._writer_connection()
        raw = conn.connection.driver_connection
        assert isinstance(raw, sqlite3.Connection) and not conn.in_transaction()
        return raw

    @contextlib.contextmanager
    def _translated(self, *, writing: bool) -> Iterator[None]:
        """The store's errors for the driver's: a busy timeout says what it waited for."""
        try:
            yield
        except (sqlite3.Error, DBAPIError) as error:
            text = str(getattr(error, "orig", error))
            if "database is locked" in text or "database is busy" in text:
                raise StoreTimeoutError(
                    f"waited {self._busy_timeout_s:g} s for the write lock on the SQLite file "
                    f"{self._file}: another process held it all that time "
                    "(raise sqlite_busy_timeout_ms to wait longer)"
                ) from None
            # A local file commits or rolls back before the call returns: the outcome is known.
            raise translate(
                error, where=self._where, writing=writing, may_have_committed=False
            ) from None

    async def append_batch(self, batch: Batch, keys: SessionKeys) -> list[int]:
        check_writable(self.read_only, self._where)
        try:
            seqs = await outcome_of(self._appends.submit(batch, keys))
        finally:  # a caller cancelled while it ran still wrote it; a failed one, nothing
            self._indexer.wrote(batch.session_id, len(batch.payloads))
        self._totals.appended(batch.session_id, sum(batch.counts))
        return seqs

    async def record_call(self, record: CallRecord) -> int | None:
        check_writable(self.read_only, self._where)
        here = self._record_here(record)
        row_id, total = (
            here.result() if here is not None else await outcome_of(self._records.submit(record))
        )
        self._totals.saw(record.session_id, total)
        return row_id

    def known_total(self, session_id: str) -> int | None:
        return self._totals.get(session_id)

    def appended(self, session_id: str, tokens: int) -> None:
        self._totals.appended(session_id, tokens)

    def _record_here(self, record: CallRecord) -> Future[tuple[int | None, int]] | None:
        """The record run on the caller's thread, on the writer's connection, when the writer
        thread is idle and no other process holds the write lock: the two thread hops were
        most of a pre-flight. It never waits (busy timeout 0 while it tries; None: queue it)
        and never checkpoints the WAL (that I/O stays on the writer thread)."""
        if not self._lendable:
            return None
        with self._writer.borrowed() as free:
            if not free or self._writer_conn is None:  # busy, or not opened by the thread yet
                return None
            raw = self._writer_driver_connection()
            with self._translated(writing=True):
                if self._checkpoint_pages is None:  # the connection's own, to restore
                    (self._checkpoint_pages,) = raw.execute("PRAGMA wal_autocheckpoint").fetchone()
                raw.execute("PRAGMA busy_timeout = 0")
                raw.execute("PRAGMA wal_autocheckpoint = 0")
            try:
                return self._records.run_here(raw, record)
            finally:
                raw.execute(f"PRAGMA wal_autocheckpoint = {int(self._checkpoint_pages)}")
                raw.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")

    def _index_and_wait(self, sessions: set[str] | None) -> None:
        """From the indexer's thread: index on the writer thread, wait for it."""
        self._writer.submit(self._index_on_writer, sessions).result()

    def _index_on_writer(self, sessions: set[str] | None) -> int:
        """On the writer thread: index what `sessions` (every session: None) left pending."""
        with self._translated(writing=True):
            return index_pending(self._writer_driver_connection(), sessions)

    async def catch_up_search_index(self, session_id: str | None = None) -> bool:
        if self.read_only:  # a read-only search matches unindexed rows on its own
            return False
        sessions = None if session_id is None else {session_id}
        try:
            await on_thread(self._writer, partial(self._index_on_writer, sessions))
        except (StoreError, StoreTimeoutError):  # locked, unwritable: the search copes
            return False
        return True

    async def active_rows(self, session_id: str) -> Sequence[ActiveRow]:
        loop = asyncio.get_running_loop()
        job = partial(self._read_driver_sync, sqlite_active_rows, (session_id,))
        return await loop.run_in_executor(self._readers, job)

    def _close_writer(self) -> None:
        if self._writer_conn is not None:
            self._writer_conn.close()
            self._writer_conn = None
        self._writer_engine.dispose()

    def _read_driver_sync(self, fn: Callable[..., _T], args: tuple[Any, ...]) -> _T:
        with self._translated(writing=False), self.engine.connect() as conn:
            raw = conn.connection.driver_connection
            assert raw is not None
            return fn(raw, *args)

    def _read_sync(self, fn: Callable[..., _T], args: tuple[Any, ...], kw: dict[str, Any]) -> _T:
        with self._translated(writing=False), self.engine.connect() as conn:
            conn = conn.execution_options(**{SQLITE_BEGIN: None})
            return fn(conn, *args, **kw)

    async def write(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        check_writable(self.read_only, self._where)
        session_id = written_session(args)
        try:
            return await on_thread(self._writer, partial(self._write_sync, fn, args, kwargs))
        finally:  # it may have added rows to index (a summary, an append with originals)
            self._totals.wrote(fn, session_id)
            if session_id is not None:
                self._indexer.wrote(session_id, 0)

    async def read(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._readers, partial(self._read_sync, fn, args, kwargs))

    def async_engine(self) -> AsyncEngine:
        if self._user_engine is not None:
            return self._user_engine
        if self._memory:
            raise ValueError(
                "an in-memory SQLite store has no second connection for ad-hoc SQL; "
                "use a file URL such as sqlite:///sessions.db"
            )
        return self._async_engines.current()

    async def dispose(self) -> None:
        loop = asyncio.get_running_loop()
        if left := await asyncio.to_thread(self._indexer.close):
            sessions, everything = left
            with contextlib.suppress(Exception):  # still pending: the next search indexes it
                await loop.run_in_executor(
                    self._writer, self._index_on_writer, None if everything else sessions
                )
        await loop.run_in_executor(self._writer, self._close_writer)
        await loop.run_in_executor(self._readers, self.engine.dispose)
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        await self._async_engines.close_all()


def refuse_a_directory(path: Path) -> None:
    """A directory named as the database is a mistake to name, not a file SQLite cannot open
    ("unable to open database file", read as an unreachable database)."""
    if path.is_dir():
        raise DatabaseNotFoundError(
            f"{path.resolve()} is a directory, not a SQLite file: name the database file in "
            f"--url / $SESSIONSTORE_URL (e.g. {sqlite_url_of(path.resolve() / 'sessionstore.db')})"
        )


def read_only_sqlite_url(url: URL) -> URL:
    """The URL of a read-only connection to an existing SQLite file (`mode=ro`).

    Raises DatabaseNotFoundError when the file is missing: opening it would create it.
    """
    path = Path(url.database or "").resolve()
    if not path.is_file():
        raise DatabaseNotFoundError(
            f"no SQLite database at {path}: check the path in --url / $SESSIONSTORE_URL "
            f"(commands that only read never create one; `sessionstore migrate --url "
            f"'{sqlite_url_of(path)}'` does)"
        )
    # As a URI: a `?` or `#` in the file's name is escaped, not read as a query or fragment.
    return url.set(database=path.as_uri(), query={**url.query, "mode": "ro", "uri": "true"})


def configure_sqlite(
    engine: Engine,
    busy_timeout_ms: int = 5000,
    synchronous: str = "FULL",
    *,
    read_only: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> None:
    """WAL, busy timeout, foreign keys, and explicit BEGIN control for a SQLite engine.

    A read-only connection changes no journal mode or durability setting (it cannot).
    Switching a new file to WAL waits up to `timeout_s` for other connections doing the
    same (`_sqlite_wal.py`).
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, record: Any) -> None:
        register_maintenance(dbapi_connection, record.info)
        # Hand transaction control to the "begin" hook below: the driver's
        # implicit BEGIN cannot take the write lock up front.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            if not read_only:
                enter_wal(cursor, timeout_s, engine.url.database)
                cursor.execute(f"PRAGMA synchronous = {synchronous.upper()}")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get(SQLITE_BEGIN, "DEFERRED")
        if mode is not None:
            conn.connection.driver_connection.execute(f"BEGIN {mode}")  # type: ignore[union-attr]
