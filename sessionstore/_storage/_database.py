"""Where transactions run: the `Database` seam, and the runner each backend provides.

Every store operation is a plain function over a SQLAlchemy `Connection`, run as
one transaction. On SQLite it runs in a worker thread in a single hop (a
dedicated writer thread serializes writers in-process, BEGIN IMMEDIATE and the
busy timeout serialize them across processes). On PostgreSQL the same function
drives asyncpg through SQLAlchemy's `run_sync`, with row locks per session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from .._rows import Batch
from .._security._payload_sealing import SessionKeys
from ._append_rows import ActiveRow
from ._call_record import CallRecord
from ._outcomes import DEFAULT_TIMEOUT_S

if TYPE_CHECKING:
    from ._postgres._database import PostgresDatabase
    from ._sqlite._database import SQLiteDatabase

_T = TypeVar("_T")


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

    async def active_rows(self, session_id: str) -> Sequence[ActiveRow]:
        """The load hot path: the active context's rows, payloads as JSON text, in one
        statement, or two for a branch that still shares its ancestors' rows (the plain
        statement finds none of them; the lineage one reads them first)."""
        ...

    async def catch_up_search_index(self, session_id: str | None = None) -> bool:
        """Index the stored rows the full-text index lacks, of `session_id` or of every
        session (a search calls this first); whether the index now holds every row stored
        before the call (False: a search must also match the rows it lacks)."""
        ...

    async def dispose(self) -> None:
        """Close every pooled connection and worker thread."""
        ...


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
    # Each backend's runner loads with its first use: a SQLite program never imports the
    # PostgreSQL driver (about 60 ms of a command's start-up).
    if url.get_backend_name() == "sqlite":
        from ._sqlite._database import SQLiteDatabase

        return SQLiteDatabase(
            url,
            user_engine=engine,
            timeout_s=timeout_s,
            busy_timeout_ms=sqlite_busy_timeout_ms,
            synchronous=sqlite_synchronous,
            read_only=read_only,
            **engine_kwargs,
        )
    from ._postgres._database import PostgresDatabase

    return PostgresDatabase(
        url,
        engine=engine,
        timeout_s=timeout_s,
        read_only=read_only,
        failover_retry_s=failover_retry_s,
        **engine_kwargs,
    )
