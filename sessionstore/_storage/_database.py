"""Where transactions run: URL resolution and one runner per backend.

Every store operation is a plain function over a SQLAlchemy `Connection`, run as
one transaction. On SQLite it runs in a worker thread in a single hop (a
dedicated writer thread serializes writers in-process, BEGIN IMMEDIATE and the
busy timeout serialize them across processes). On PostgreSQL the same function
drives asyncpg through SQLAlchemy's `run_sync`, with row locks per session.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar

import asyncpg
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from .._errors import (
    DatabaseNotFoundError,
    ReadOnlyStoreError,
    StoreError,
    StoreTimeoutError,
    StoreUnavailableError,
    UnsupportedURLError,
)
from .._rows import Batch
from .._security._payload_sealing import SessionKeys
from ._append_only import register as register_maintenance
from ._append_rows import (
    PG_ACTIVE_SQL,
    PG_APPEND_SQL,
    PG_LINEAGE_SQL,
    PG_SESSION_STATE_SQL,
    STATE_NAMES,
    pg_append_args,
    sqlite_active_rows,
    sqlite_append,
)
from ._call_record import CallRecord, pg_record_call, sqlite_record_call
from ._driver_errors import is_connection_lost, translate
from ._known_totals import KNOWN_SESSIONS, KnownTotals
from ._loops import PerLoop
from ._postgres._citus import APPEND_SQL as CITUS_APPEND_SQL
from ._postgres._citus import lineage_rows as citus_lineage_rows
from ._postgres._url import asyncpg_dsn, pooler_mode, unique_statement_name, without_pooler
from ._sqlite._group_commit import GroupCommit
from ._sqlite._idle_indexing import IdleIndexer
from ._sqlite._search_index import index_pending
from ._sqlite._wal import enter_wal
from ._sqlite._writer_thread import WriterThread

DEFAULT_URL: Final = "sqlite:///sessionstore.db"
_APPEND_ATTEMPTS: Final = 1000  # each failed attempt means another writer's append landed
# Pauses between an append's retries during a failover window (`failover_retry_s`).
_FAILOVER_PAUSE_S: Final = (0.05, 0.1, 0.2, 0.5, 1.0)
URL_ENV: Final = "SESSIONSTORE_URL"
# Execution option naming how a SQLite transaction begins: "IMMEDIATE" takes the
# write lock up front (no read->write upgrade deadlocks), "DEFERRED" is a plain
# snapshot, None runs each statement on its own (single-statement reads).
SQLITE_BEGIN: Final = "sqlite_begin"
_SQLITE_READERS: Final = 4
# Every wait inside the store (a pool checkout, a statement, a lock) ends by this default.
DEFAULT_TIMEOUT_S: Final = 60.0

_SQLITE_DRIVERS: Final = {"sqlite", "sqlite+aiosqlite", "sqlite+pysqlite"}
_POSTGRES_DRIVERS: Final = {
    "postgres",
    "postgresql",
    "postgresql+asyncpg",
    "postgresql+psycopg",
    "postgresql+psycopg2",
}
_SUPPORTED: Final = (
    "sqlite:///path/to/file.db (embedded default) or postgresql+asyncpg://user@host:5432/dbname"
)

_T = TypeVar("_T")


def resolve_url(url: str | URL | None = None) -> URL:
    """Pick the URL (argument, then $SESSIONSTORE_URL, then ./sessionstore.db), normalized."""
    raw = url if url is not None else os.environ.get(URL_ENV) or DEFAULT_URL
    try:
        parsed = make_url(raw)
    except ArgumentError:
        raise UnsupportedURLError(  # the text is not quoted: it may hold a password
            f"could not parse the database URL; expected {_SUPPORTED}"
        ) from None
    driver = parsed.drivername
    if driver in _SQLITE_DRIVERS:
        if parsed.host or parsed.username or parsed.port:
            name = parsed.host or "the file"
            raise UnsupportedURLError(
                f"a SQLite URL names a file after three slashes: sqlite:///{name} (relative to "
                f"the working directory) or sqlite:////absolute/path/{name}; this one has "
                "only two, so the file name was read as a host"
            )
        return parsed.set(drivername="sqlite")
    if driver in _POSTGRES_DRIVERS:
        return parsed.set(drivername="postgresql+asyncpg")
    raise UnsupportedURLError(
        f"unsupported database URL scheme {driver!r}: sessionstore supports {_SUPPORTED}"
    )


def is_memory_sqlite(url: URL) -> bool:
    """True for an in-memory SQLite database (one shared connection, gone on exit)."""
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


class _WriteOutcome(asyncio.Future[_T]):
    """The outcome of a write, which a cancelled caller cannot cut short.

    A write cut off half-way would leave the caller unsure whether it happened.
    `cancel` refuses, so asyncio throws the caller's CancelledError into it only
    once the write has finished and its outcome is knowable. Cheaper than looping
    on `asyncio.wait`, which matters on the append hot path.
    """

    def __init__(self, work: Future[_T] | asyncio.Future[_T], loop: asyncio.AbstractEventLoop):
        super().__init__(loop=loop)
        self._work = work  # a task is otherwise only weakly referenced by the loop

    def cancel(self, msg: Any | None = None) -> bool:
        return False


def finish_despite_cancellation(work: Awaitable[_T]) -> asyncio.Future[_T]:
    """Await `work` (a coroutine gets a Task) to the end even if the caller is cancelled."""
    job = asyncio.ensure_future(work)
    outcome = _WriteOutcome(job, job.get_loop())
    job.add_done_callback(partial(_settle, outcome))
    return outcome


def on_thread(executor: Executor, job: Callable[[], _T]) -> asyncio.Future[_T]:
    """Run `job` on `executor`, awaited to the end even if the caller is cancelled."""
    return outcome_of(executor.submit(job))


def outcome_of(work: Future[_T]) -> asyncio.Future[_T]:
    """The running loop's view of a worker thread's `work`, which a cancel cannot cut short."""
    loop = asyncio.get_running_loop()
    outcome = _WriteOutcome(work, loop)
    work.add_done_callback(partial(_hand_over, loop, outcome))
    return outcome


def _hand_over(
    loop: asyncio.AbstractEventLoop, outcome: asyncio.Future[_T], done: Future[_T]
) -> None:
    """On the worker thread: pass the finished job's outcome to the loop."""
    bell = _doorbells.get(loop)
    if bell is None:
        with _doorbells_lock:
            bell = _doorbells.setdefault(loop, _Doorbell(loop))
    bell.ring(outcome, done)


class _Doorbell:
    """Outcomes finished on worker threads, handed to one loop in one wake-up: a group commit
    settles many appends at once, and every `call_soon_threadsafe` is a write to the loop's
    self-pipe (a system call) and a pass of the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)  # the registry's key: a strong one would keep it alive
        self._mutex = threading.Lock()
        self._ready: list[tuple[asyncio.Future[Any], Future[Any]]] = []

    def ring(self, outcome: asyncio.Future[Any], done: Future[Any]) -> None:
        with self._mutex:
            self._ready.append((outcome, done))
            if len(self._ready) > 1:  # already rung: the loop will take this one too
                return
        loop = self._loop()
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # closed meanwhile: nobody awaits these
                loop.call_soon_threadsafe(self._answer)
                return
        with self._mutex:
            self._ready.clear()

    def _answer(self) -> None:
        with self._mutex:
            ready, self._ready = self._ready, []
        for outcome, done in ready:
            _settle(outcome, done)


_doorbells: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Doorbell] = (
    weakref.WeakKeyDictionary()
)
_doorbells_lock = threading.Lock()


def _settle(outcome: asyncio.Future[_T], done: Future[_T] | asyncio.Future[_T]) -> None:
    """Copy a finished write's outcome (retrieving any error, so none is reported unhandled)."""
    if done.cancelled():  # the loop or the executor shut down under it
        outcome.set_exception(asyncio.CancelledError())
    elif (error := done.exception()) is not None:
        outcome.set_exception(error)
    else:
        outcome.set_result(done.result())


class Database(Protocol):
    """Runs transaction functions against one database.

    Writes run to completion even when the awaiting task is cancelled.
    """

    url: URL
    dialect: str
    read_only: bool  # writes are refused (ReadOnlyStoreError), the server enforces it too

    async def write(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        """Run `fn(conn, *args)` in a write transaction and commit."""
        ...

    async def read(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        """Run `fn(conn, *args)` for reading (single statements see a consistent snapshot)."""
        ...

    def async_engine(self) -> AsyncEngine:
        """An AsyncEngine on the same database, for ad-hoc SQL."""
        ...

    async def append_batch(self, batch: Batch, keys: SessionKeys) -> list[int]:
        """The append hot path: number, seal (if the session is encrypted), chain and insert
        a batch in one transaction; its seqs."""
        ...

    async def record_call(self, record: CallRecord) -> int | None:
        """The pre-flight's write: record a model call with the events its decision (taken
        from the stored total, under the session's lock) returns; its id (None: decided
        against, nothing written)."""
        ...

    def known_total(self, session_id: str) -> int | None:
        """The session's stored token total as this store last saw it (no I/O; another
        process may have moved it since), or None if it keeps none."""
        ...

    def appended(self, session_id: str, tokens: int) -> None:
        """A committed write of this store other than `append_batch` appended `tokens` to
        the session's total: move the known total with it (`append_batch` does so itself)."""
        ...

    async def active_rows(self, session_id: str, lineage: bool = False) -> Sequence[Sequence[Any]]:
        """The load hot path: (seq, kind, ref_seq, payload, payload_sealed) of the active
        context, payloads as JSON text, in one statement; `lineage` includes the rows a
        branch shares with its ancestors (the plain statement returns none for it)."""
        ...

    async def catch_up_search_index(self, session_id: str | None = None) -> bool:
        """Index the stored rows the full-text index lacks, of `session_id` or of every
        session (a search calls this first); whether the index now holds every row stored
        before the call (False: a search must also match the rows it lacks)."""
        ...

    async def dispose(self) -> None:
        """Close every pooled connection and worker thread."""
        ...


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
        self._records: GroupCommit[tuple[int | None, int]] = GroupCommit(
            self._writer,
            self._writer_driver_connection,
            sqlite_record_call,
            partial(self._translated, writing=True),
            relaxed=("NORMAL", level) if level in {"FULL", "EXTRA"} else None,
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
        with self._translated(writing=True), conn.begin():
            return fn(conn, *args, **kw)

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

    async def active_rows(self, session_id: str, lineage: bool = False) -> Sequence[Sequence[Any]]:
        loop = asyncio.get_running_loop()
        job = partial(self._read_driver_sync, sqlite_active_rows, (session_id, lineage))
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
        session_id = _written_session(args)
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


_POOL_RESET: Final = "reset" in inspect.signature(asyncpg.create_pool).parameters  # asyncpg 0.30+


async def _keep_as_is(connection: asyncpg.Connection) -> None:
    """A pooled connection's reset behind a transaction pooler: nothing to do."""


class _PostgresLoopState:
    """What one event loop uses: asyncpg connections belong to the loop that opened them."""

    def __init__(
        self,
        make_engine: Callable[[], AsyncEngine],
        dsn: str,
        timeout_s: float,
        server_settings: Mapping[str, str],
        pooled: bool = False,
    ):
        self.engine = make_engine()
        self._server_settings = dict(server_settings)
        # Single statements need no BEGIN/COMMIT round trips; behind a transaction pooler
        # every statement runs in a transaction (PostgresDatabase explains why).
        self.autocommit = (
            self.engine if pooled else self.engine.execution_options(isolation_level="AUTOCOMMIT")
        )
        self._pooled = pooled
        self._dsn = dsn
        self._timeout_s = timeout_s
        self._pool: asyncpg.Pool | None = None
        self._pool_lock = asyncio.Lock()  # used on this state's loop only

    async def pool(self) -> asyncpg.Pool:
        """The hot path's plain asyncpg pool, opened on first use."""
        if self._pool is not None:
            return self._pool
        async with self._pool_lock:
            if self._pool is None:
                self._pool = await asyncpg.create_pool(
                    self._dsn,
                    min_size=1,
                    max_size=10,
                    timeout=self._timeout_s,
                    command_timeout=self._timeout_s,
                    server_settings=self._server_settings,
                    # Behind a transaction pooler a statement prepared on one server
                    # connection is unknown on the next: unnamed statements only.
                    statement_cache_size=0 if self._pooled else 100,
                    # and resetting the session of whichever server connection PgBouncer
                    # picks would cost a round trip for nothing (each statement's own
                    # transaction ended with it; a broken one was terminated, not released).
                    **({"reset": _keep_as_is} if self._pooled and _POOL_RESET else {}),
                )
            return self._pool

    async def close(self) -> None:
        """Close gracefully, within the timeout; what does not close in time is dropped."""
        if self._pool is not None:
            try:
                await asyncio.wait_for(self._pool.close(), self._timeout_s)
            except TimeoutError:
                self._pool.terminate()
            self._pool = None
        await self.engine.dispose()

    def abandon(self) -> None:
        """Drop everything without awaiting: its loop closed without shutting us down."""
        if self._pool is not None:
            with contextlib.suppress(Exception):  # the transports may already be gone
                self._pool.terminate()
            self._pool = None
        self.engine.sync_engine.dispose(close=False)


class PostgresDatabase:
    """PostgreSQL through asyncpg; transaction functions run via `run_sync`.

    The append hot path skips SQLAlchemy's async adapter (which costs as much
    as the round trip itself) and runs one statement on a plain asyncpg pool.
    Pools and engines are kept per event loop (`PerLoop`), so one store serves
    every thread and loop of an application.

    Behind PgBouncer in transaction mode (`?pgbouncer=transaction` in the URL) consecutive
    transactions of one client connection run on different server connections, and a
    message outside a transaction may too: nothing may rely on a prepared statement or a
    session setting outliving its transaction. So SQLAlchemy prepares each statement under
    a unique name and caches none, asyncpg caches none (unnamed statements), every hot-path
    statement and every read runs inside BEGIN/COMMIT (an unnamed statement's Parse and
    its Bind then reach the same server connection), and a read-only store asks for READ
    ONLY transactions instead of a startup setting PgBouncer would refuse. The store's
    advisory locks and settings are transaction-level already (pg_advisory_xact_lock,
    set_config(..., true), SET LOCAL).

    `failover_retry_s` > 0: an append that fails because no writable primary answered or
    the connection broke is retried with the batch (and its idempotency token) unchanged,
    with short pauses, for up to that many seconds: a retry of a batch that did commit
    finds its token stored and returns its seqs, so it is stored exactly once.
    """

    dialect = "postgresql"
    # Set when the schema check finds the tables distributed by Citus (_citus.py): appends
    # and a branch's lineage then take paths that Citus routes to one worker.
    citus = False

    def __init__(
        self,
        url: URL,
        *,
        engine: AsyncEngine | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        read_only: bool = False,
        failover_retry_s: float = 0.0,
        **kwargs: Any,
    ) -> None:
        self.url = url
        self.read_only = read_only
        if not failover_retry_s >= 0:
            raise ValueError(f"failover_retry_s must be >= 0 seconds, got {failover_retry_s!r}")
        self.failover_retry_s = float(failover_retry_s)
        self.pooler = pooler_mode(url)
        self._pooled = self.pooler == "transaction"
        # Read-only is the server's rule, not only ours: every transaction is READ ONLY
        # (a startup setting; behind a transaction pooler, BEGIN READ ONLY each time).
        settings = {"default_transaction_read_only": "on"} if read_only and not self._pooled else {}
        self._where = url.render_as_string(hide_password=True)
        self._user_engine = engine
        self._timeout_s = timeout_s
        dsn = asyncpg_dsn(url)  # every host of a multi-host URL, as SQLAlchemy reads it
        url = without_pooler(url)
        if engine is not None:
            source = engine.sync_engine.pool  # the user's pool settings and connect arguments

            def make_engine() -> AsyncEngine:
                return create_async_engine(url, pool=source.recreate())

        else:
            kwargs.setdefault("pool_timeout", timeout_s)
            connect_args = kwargs.setdefault("connect_args", {})
            connect_args.setdefault("command_timeout", timeout_s)
            if self._pooled:
                connect_args.setdefault("prepared_statement_cache_size", 0)
                connect_args.setdefault("prepared_statement_name_func", unique_statement_name)
                connect_args.setdefault("statement_cache_size", 0)
            if settings:
                connect_args["server_settings"] = {
                    **connect_args.get("server_settings", {}),
                    **settings,
                }

            def make_engine() -> AsyncEngine:
                return create_async_engine(url, **kwargs)

        # Session state (last_seq, chain head, keys) as this store's appends left it: an
        # append against it is one round trip while nobody else wrote the session.
        self._sessions: dict[str, dict[str, Any]] = {}
        # Each session's context_tokens as this store last saw them: a model call's record
        # decided from it is one round trip while nobody else changed the session.
        self._totals = KnownTotals()
        self._loops: PerLoop[_PostgresLoopState] = PerLoop(
            lambda: _PostgresLoopState(make_engine, dsn, timeout_s, settings, self._pooled),
            _PostgresLoopState.close,
            _PostgresLoopState.abandon,
        )

    async def write(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        check_writable(self.read_only, self._where)
        engine = self._loops.current().engine
        try:
            return await finish_despite_cancellation(self._run(engine, fn, args, kwargs, True))
        finally:
            self._totals.wrote(fn, _written_session(args))

    async def read(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        try:
            return await self._run(self._loops.current().autocommit, fn, args, kwargs, False)
        except StoreUnavailableError:  # a pooled connection that died while idle: read again
            return await self._run(self._loops.current().autocommit, fn, args, kwargs, False)

    async def _run(
        self,
        engine: AsyncEngine,
        fn: Callable[..., _T],
        args: tuple[Any, ...],
        kw: dict[str, Any],
        writing: bool,
    ) -> _T:
        """One transaction; a connection that saw an error is discarded, never pooled again."""
        try:
            conn = await engine.connect()
            if self._pooled and self.read_only:  # no startup setting through the pooler
                await conn.execution_options(postgresql_readonly=True)
        except Exception as error:
            raise self._translate(error, writing, may_have_committed=False) from None
        committing = False
        try:
            transaction = await conn.begin()
            result = await conn.run_sync(fn, *args, **kw)
            committing = True
            await transaction.commit()
            return result
        except Exception as error:
            with contextlib.suppress(Exception):
                await conn.invalidate()
            raise self._translate(error, writing, may_have_committed=committing) from None
        finally:
            with contextlib.suppress(Exception):
                await conn.close()

    async def fetch_statement(
        self, sql: str, *args: Any, writing: bool = False
    ) -> list[asyncpg.Record]:
        """Run one self-contained statement (autocommit) and return its rows.

        A connection that saw an error is terminated before it goes back to the pool, so
        no connection is ever handed to a second operation in an unknown state.
        """

        async def run() -> list[asyncpg.Record]:
            try:
                pool = await self._loops.current().pool()
                async with asyncio.timeout(self._timeout_s):  # no extra task, unlike wait_for
                    conn = await pool.acquire()
            except TimeoutError:
                raise StoreTimeoutError(
                    f"waited {self._timeout_s:g} s for a free connection to {self._where}: all "
                    "of this event loop's pooled connections stayed busy; nothing was written"
                ) from None
            except Exception as error:
                raise self._translate(error, writing, may_have_committed=False) from None
            try:
                if self._pooled:  # the Parse and the Bind must reach one server connection
                    async with conn.transaction(readonly=self.read_only):
                        rows: list[asyncpg.Record] = await conn.fetch(sql, *args)
                    return rows
                rows = await conn.fetch(sql, *args)
                return rows
            except Exception as error:
                if is_connection_lost(error):
                    with contextlib.suppress(Exception):  # the pool may have dropped it already
                        conn.terminate()
                raise self._translate(error, writing, may_have_committed=True) from None
            finally:
                with contextlib.suppress(Exception):
                    await pool.release(conn, timeout=self._timeout_s)

        if writing:
            return await finish_despite_cancellation(run())
        try:
            return await run()
        except StoreUnavailableError:  # a pooled connection that died while idle: read again
            return await run()

    async def append_batch(self, batch: Batch, keys: SessionKeys) -> list[int]:
        """Append against the session state this store last saw (one round trip when it
        is still current); when another writer moved the session, read it and retry."""
        check_writable(self.read_only, self._where)
        if self.failover_retry_s <= 0:
            return await self._append_once(batch, keys)
        deadline = time.monotonic() + self.failover_retry_s
        for pause in itertools.chain(_FAILOVER_PAUSE_S, itertools.repeat(_FAILOVER_PAUSE_S[-1])):
            try:
                return await self._append_once(batch, keys)
            except StoreUnavailableError:
                # The same batch, token included, again: a copy that did commit is found
                # by its token (DuplicateAppendError) and stored nothing twice.
                self._sessions.pop(batch.session_id, None)  # re-read on whichever primary
                if time.monotonic() + pause > deadline:
                    raise
                await asyncio.sleep(pause)
        raise AssertionError("unreachable: the pauses never end")  # pragma: no cover

    async def _append_once(self, batch: Batch, keys: SessionKeys) -> list[int]:
        sid = batch.session_id
        for _attempt in range(_APPEND_ATTEMPTS):
            state = self._sessions.pop(sid, None) or await self._session_state(sid)
            args, chained = pg_append_args(batch, state, keys)
            sql = CITUS_APPEND_SQL if self.citus else PG_APPEND_SQL
            rows = await self.fetch_statement(sql, *args, writing=True)
            if rows:
                seqs = sorted(row[0] for row in rows)
                if len(self._sessions) >= KNOWN_SESSIONS:
                    self._sessions.clear()
                known = {name: chained[name] for name in STATE_NAMES if name in chained}
                self._sessions[sid] = {**state, **known, "last_seq": seqs[-1]}
                self._totals.appended(sid, sum(batch.counts))
                return seqs
        raise StoreError(
            f"session {sid!r} kept moving under {_APPEND_ATTEMPTS} attempts to append to it "
            "(other writers appended each time); nothing was written, try again"
        )

    def known_total(self, session_id: str) -> int | None:
        return self._totals.get(session_id)

    def appended(self, session_id: str, tokens: int) -> None:
        self._totals.appended(session_id, tokens)

    async def record_call(self, record: CallRecord) -> int | None:
        check_writable(self.read_only, self._where)
        sid = record.session_id
        row_id, total = await pg_record_call(self.fetch_statement, record, self._totals.get(sid))
        self._totals.saw(sid, total)
        return row_id

    async def _session_state(self, session_id: str) -> dict[str, Any]:
        rows = await self.fetch_statement(PG_SESSION_STATE_SQL, session_id)
        if not rows:
            return dict.fromkeys(STATE_NAMES) | {"last_seq": 0}
        return dict(rows[0])

    async def active_rows(self, session_id: str, lineage: bool = False) -> Sequence[Sequence[Any]]:
        if lineage and self.citus:
            return await citus_lineage_rows(self.fetch_statement, session_id)
        return await self.fetch_statement(PG_LINEAGE_SQL if lineage else PG_ACTIVE_SQL, session_id)

    def _translate(
        self, error: Exception, writing: bool, *, may_have_committed: bool
    ) -> BaseException:
        return translate(
            error, where=self._where, writing=writing, may_have_committed=may_have_committed
        )

    def async_engine(self) -> AsyncEngine:
        if self._user_engine is not None:
            return self._user_engine
        return self._loops.current().engine

    async def catch_up_search_index(self, session_id: str | None = None) -> bool:
        """Nothing to do: PostgreSQL maintains its GIN index with every insert."""
        return True

    async def dispose(self) -> None:
        await self._loops.close_all()


def open_database(
    url: URL,
    *,
    engine: AsyncEngine | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    sqlite_busy_timeout_ms: int = 5000,
    sqlite_synchronous: str = "FULL",
    read_only: bool = False,
    failover_retry_s: float = 0.0,
    **engine_kwargs: Any,
) -> SQLiteDatabase | PostgresDatabase:
    """The runner for `url`'s backend (the URL must come from `resolve_url`).

    `engine`, a user's AsyncEngine on the same URL, is what `async_engine()` hands
    back; the store's own work runs on connections of its own. `failover_retry_s`
    (PostgreSQL) retries appends through a primary failover (see `PostgresDatabase`).
    """
    if url.get_backend_name() == "sqlite":
        return SQLiteDatabase(
            url,
            user_engine=engine,
            timeout_s=timeout_s,
            busy_timeout_ms=sqlite_busy_timeout_ms,
            synchronous=sqlite_synchronous,
            read_only=read_only,
            **engine_kwargs,
        )
    return PostgresDatabase(
        url,
        engine=engine,
        timeout_s=timeout_s,
        read_only=read_only,
        failover_retry_s=failover_retry_s,
        **engine_kwargs,
    )


def _written_session(args: tuple[Any, ...]) -> str | None:
    """The session a transaction function writes, from its first argument: the session id
    itself, or what it writes (a batch, a compaction) naming it."""
    first = args[0] if args else None
    named = first if isinstance(first, str) else getattr(first, "session_id", None)
    return named if isinstance(named, str) else None


def check_writable(read_only: bool, where: str) -> None:
    """Refuse a write on a store opened read-only, before it reaches the database."""
    if read_only:
        raise ReadOnlyStoreError(
            f"the store on {where} was opened read-only; open it without read_only=True to write"
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
            f"'sqlite:///{path}'` does)"
        )
    return url.set(database=f"file:{path}", query={**url.query, "mode": "ro", "uri": "true"})


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
