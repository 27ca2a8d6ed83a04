"""The PostgreSQL runner: asyncpg pools per event loop, the append outside SQLAlchemy."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

import asyncpg
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from ..._errors import (
    StoreError,
    StoreTimeoutError,
    StoreUnavailableError,
)
from ..._loops import PerLoop
from ..._rows import Batch
from ..._security._payload_sealing import SessionKeys
from .._append_rows import (
    PG_ACTIVE_SQL,
    PG_APPEND_SQL,
    PG_LINEAGE_SQL,
    PG_SESSION_STATE_SQL,
    STATE_NAMES,
    ActiveRow,
    pg_append_args,
)
from .._call_record import CallRecord, pg_record_call
from .._driver_errors import is_connection_lost, translate
from .._known_totals import KNOWN_SESSIONS, KnownTotals
from .._outcomes import (
    DEFAULT_TIMEOUT_S,
    check_writable,
    finish_despite_cancellation,
    written_session,
)
from .._telemetry import NO_FLUSH_WAIT, is_telemetry
from ._citus import APPEND_SQL as CITUS_APPEND_SQL
from ._citus import lineage_rows as citus_lineage_rows
from ._url import asyncpg_dsn, pooler_mode, unique_statement_name, without_pooler
from ._worker_routes import PLACEMENT_SQL, Node, WorkerRoutes

_APPEND_ATTEMPTS: Final = 1000  # each failed attempt means another writer's append landed
# Pauses between an append's retries during a failover window (`failover_retry_s`).
_FAILOVER_PAUSE_S: Final = (0.05, 0.1, 0.2, 0.5, 1.0)
_T = TypeVar("_T")
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
        self._worker_pools: dict[Node, asyncpg.Pool] = {}
        self._pool_lock = asyncio.Lock()  # used on this state's loop only

    async def pool(self) -> asyncpg.Pool:
        """The hot path's plain asyncpg pool, opened on first use."""
        if self._pool is not None:
            return self._pool
        async with self._pool_lock:
            if self._pool is None:
                self._pool = await self._open_pool(self._dsn)
            return self._pool

    async def worker_pool(self, node: Node, dsn: str) -> asyncpg.Pool:
        """A pool to a Citus worker (`_worker_routes.py`), opened on its first use."""
        pool = self._worker_pools.get(node)
        if pool is not None:
            return pool
        async with self._pool_lock:
            if node not in self._worker_pools:
                self._worker_pools[node] = await self._open_pool(dsn)
            return self._worker_pools[node]

    async def _open_pool(self, dsn: str) -> asyncpg.Pool:
        return await asyncpg.create_pool(
            dsn,
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

    def _pools(self) -> list[asyncpg.Pool]:
        pools = [*self._worker_pools.values()]
        self._worker_pools = {}
        if self._pool is not None:
            pools.append(self._pool)
            self._pool = None
        return pools

    async def close(self) -> None:
        """Close gracefully, within the timeout; what does not close in time is dropped."""
        for pool in self._pools():
            try:
                await asyncio.wait_for(pool.close(), self._timeout_s)
            except TimeoutError:
                pool.terminate()
        await self.engine.dispose()

    def abandon(self) -> None:
        """Drop everything without awaiting: its loop closed without shutting us down."""
        for pool in self._pools():
            with contextlib.suppress(Exception):  # the transports may already be gone
                pool.terminate()
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
        # On Citus, which worker holds each session's shard (_worker_routes.py).
        self._routes = WorkerRoutes(url) if WorkerRoutes.possible(url, self._pooled) else None
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
            self._totals.wrote(fn, written_session(args))

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
            if writing and is_telemetry(fn):  # its commit need not wait for the WAL flush
                await conn.exec_driver_sql(NO_FLUSH_WAIT)
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

    async def _worker_pool(self, node: Node) -> asyncpg.Pool | None:
        """A pool to the Citus worker `node`, or None when no connection to it opens (then
        nothing was sent, and the coordinator takes the statement; `_worker_routes.py`)."""
        assert self._routes is not None
        try:
            return await self._loops.current().worker_pool(node, self._routes.dsn(node))
        except Exception:  # refused, unknown host, authentication, timeout: any of them
            self._routes.unreachable(node)
            return None

    async def fetch_statement(
        self, sql: str, *args: Any, writing: bool = False, pool: asyncpg.Pool | None = None
    ) -> list[asyncpg.Record]:
        """Run one self-contained statement (autocommit) and return its rows; on `pool`
        (a Citus worker's) when one is given.

        A connection that saw an error is terminated before it goes back to the pool, so
        no connection is ever handed to a second operation in an unknown state.
        """

        async def run() -> list[asyncpg.Record]:
            try:
                chosen = pool or await self._loops.current().pool()
                async with asyncio.timeout(self._timeout_s):  # no extra task, unlike wait_for
                    conn = await chosen.acquire()
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
                    await chosen.release(conn, timeout=self._timeout_s)

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
            rows = await self._append_rows(sid, args)
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

    async def _append_rows(self, session_id: str, args: Sequence[Any]) -> list[asyncpg.Record]:
        """One append statement: on Citus, on the session's worker when it can be reached."""
        if not self.citus:
            return await self.fetch_statement(PG_APPEND_SQL, *args, writing=True)
        node = await self._worker_of(session_id)
        pool = None if node is None else await self._worker_pool(node)
        return await self.fetch_statement(CITUS_APPEND_SQL, *args, writing=True, pool=pool)

    async def _worker_of(self, session_id: str) -> Node | None:
        """The worker holding the session's shard (asked once), or None: the coordinator."""
        routes = self._routes
        if routes is None:
            return None
        if not routes.known(session_id):
            try:
                rows = await self.fetch_statement(PLACEMENT_SQL, session_id)
            except (StoreTimeoutError, StoreUnavailableError):
                raise
            except StoreError:  # e.g. the catalog not readable by this role: no routing
                rows = []
            routes.remember(session_id, (str(rows[0][0]), int(rows[0][1])) if rows else None)
        return routes.node(session_id)

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

    async def active_rows(self, session_id: str) -> Sequence[ActiveRow]:
        rows = await self.fetch_statement(PG_ACTIVE_SQL, session_id)
        if rows:
            return rows
        if self.citus:  # an empty session, or a branch still sharing its parent's rows
            return await citus_lineage_rows(self.fetch_statement, session_id)
        return await self.fetch_statement(PG_LINEAGE_SQL, session_id)

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
