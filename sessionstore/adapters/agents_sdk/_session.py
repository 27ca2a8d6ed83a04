"""SQLSession: the OpenAI Agents SDK `Session` protocol over a SessionStore.

A drop-in for the SDK's SQLiteSession / SQLAlchemySession:
`Runner.run(agent, input, session=SQLSession("user-42", store))`.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from os import PathLike
from typing import TYPE_CHECKING, Any

from agents.memory.session_settings import (
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from ... import (
    CallUsage,
    CompactionError,
    CompactionErrorReason,
    HistoryPoint,
    Rewind,
    SdkHistory,
    SdkTables,
    SessionClosedError,
    SessionStore,
    StoreUnavailableError,
    check_session_id,
    item_list,
)
from ._branch_ids import BRANCH_SEPARATOR, MAIN_BRANCH, branch_session_id
from ._branch_ids import branch_name as _branch_name
from ._closing import Closing
from ._input_memo import MemoSlot
from ._observer import watch_runs
from ._producing_agent import producing_agent
from ._sdk_engine import open_url_store
from ._sdk_surface import SDKSurface
from ._tracking import current_run, track_load, track_save, written

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory.session import OpenAIResponsesCompactionArgs
    from agents.run_context import RunContextWrapper

    from ...compaction import CompactionManager


class SQLSession(SDKSurface):
    """One conversation's memory, stored as append-only rows.

    Many SQLSession objects can share one SessionStore (one connection pool per
    event loop), from any thread. Bound to a CompactionManager, it truncates large
    tool outputs as they are stored and compacts at turn boundaries when the
    context crosses the trigger.

    Constructed like the SDK's stores: `SQLSession(id, store)`, `SQLSession(id,
    "conversations.db")` (SQLiteSession's path, ":memory:" included),
    `SQLSession(id, engine=async_engine, create_tables=True)` (SQLAlchemySession),
    or `SQLSession.from_url(id, url=...)`.
    """

    def __init__(
        self,
        session_id: str,
        store: SessionStore | str | PathLike[str] | None = None,
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettings | dict[str, Any] | None = None,
        *,
        db_path: str | PathLike[str] | None = None,
        engine: AsyncEngine | None = None,
        create_tables: bool | None = None,
        manager: CompactionManager | None = None,
        owns_store: bool = False,
        import_sdk: bool = True,
        ensure_ascii: bool = True,
        logger: logging.Logger | None = None,
    ) -> None:
        check_session_id(session_id)
        if BRANCH_SEPARATOR in session_id:
            raise ValueError(
                f"session ids containing {BRANCH_SEPARATOR!r} name branches: open "
                "SQLSession(the session's id) and call switch_to_branch(name)"
            )
        if db_path is not None:  # SQLiteSession(id, db_path=...) and AdvancedSQLiteSession's
            if store is not None:
                raise TypeError("pass the database as store or as db_path, not both")
            store = db_path
        if store is None and engine is None and manager is None:
            store = ":memory:"  # as SQLiteSession(session_id): a database gone on close
        db_path = store if isinstance(store, str | PathLike) else None
        if isinstance(store, str | PathLike) or (store is None and engine is not None):
            store = _own_store(store, engine, create_tables, manager)
            owns_store = True
        elif engine is not None:
            raise TypeError("pass a store or an engine, not both")
        elif create_tables is not None:
            raise TypeError(
                "create_tables applies when the session opens its own database (a path or an "
                "engine); for a SessionStore pass SessionStore(..., create_tables=...)"
            )
        if store is not None and not isinstance(store, SessionStore):
            raise TypeError(
                "store must be a SessionStore or a SQLite file path (str or os.PathLike), "
                f"got {type(store).__name__}"
            )
        if store is not None and manager is not None and manager.store is not store:
            raise ValueError(
                "the manager compacts a different SessionStore than this session writes to; "
                "pass manager=CompactionManager(CompactionConfig(store=store)) for this store"
            )
        self.session_id = session_id
        self.branch_id = MAIN_BRANCH
        # The SDK stores' attributes, as they read: the file given (SQLiteSession's db_path),
        # and the SDK tables whose sessions are imported on first access.
        self.db_path = db_path
        self.sessions_table = sessions_table
        self.messages_table = messages_table
        # Accepted for SQLAlchemySession's signature: payloads are always stored as UTF-8
        # JSON text, readable in SQL, and come back the same whichever way it is set.
        self.ensure_ascii = ensure_ascii
        self._logger = logger  # where the first-access import says what it imported
        self.manager = manager
        self.store: SessionStore = store if store is not None else manager.store  # type: ignore[union-attr]
        self.session_settings: SessionSettings | None = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        self._owns_store = owns_store
        self._closed = False  # set when close() closes the store this session opened
        self._memo = MemoSlot()  # the pre-flight's digest and hygiene of this session's inputs
        # The SDK's own tables in the same database: this session's history is imported from
        # them on first access (docs/MIGRATION.md); import_sdk=False leaves them unread.
        self._sdk_history: SdkHistory | None = (
            SdkHistory.of(self.store, SdkTables(sessions_table, messages_table))
            if import_sdk
            else None
        )
        if manager is not None:
            watch_runs(manager)

    @property
    def active_session_id(self) -> str:
        """The store session this object reads and writes: `session_id` on the main branch,
        `session_id@branch` on a branch (`create_branch_from_turn`, `switch_to_branch`)."""
        return branch_session_id(self.session_id, self.branch_id)

    @property
    def engine(self) -> AsyncEngine:
        """The AsyncEngine you passed, or one on the store's database (SDK `session.engine`)."""
        return self.store.engine

    @classmethod
    def from_url(
        cls,
        session_id: str,
        *,
        url: str | URL,
        engine_kwargs: dict[str, Any] | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        create_tables: bool = False,
        import_sdk: bool = True,
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        ensure_ascii: bool = True,
        **store_kwargs: Any,
    ) -> SQLSession:
        """Same call shape as the SDK's `SQLAlchemySession.from_url`; owns its own store (an
        in-memory SQLite URL: a private temporary file, so `engine` works as the SDK's)."""
        store = open_url_store(
            url, create_tables=create_tables, engine_kwargs=engine_kwargs, **store_kwargs
        )
        return cls(
            session_id,
            store,
            session_settings=session_settings,
            owns_store=True,
            import_sdk=import_sdk,
            sessions_table=sessions_table,
            messages_table=messages_table,
            ensure_ascii=ensure_ascii,
        )

    async def _first_access(self) -> None:
        """Refuse a closed session; import it from the SDK's tables in the same database,
        once (#33); leave a branch another object deleted."""
        if self._closed:
            raise SessionClosedError(  # the SDK's words first: programs match on them
                f"SQLiteSession is closed: SQLSession {self.session_id!r} closed the database "
                "it opened. Open a new SQLSession (or pass a SessionStore you close yourself)."
            )
        if self._sdk_history is not None:
            await self._sdk_history.ensure(self.session_id, self._logger)
            self._sdk_history = None
        await self._leave_deleted_branch()

    async def get_items(
        self,
        limit: int | None = None,
        branch_id: str | None = None,
        *,
        wrapper: RunContextWrapper[Any] | None = None,
    ) -> list[TResponseInputItem]:
        """The active context; `limit` (or session_settings.limit) keeps the newest N;
        `branch_id` reads another branch (AdvancedSQLiteSession's argument).

        Every method takes the SDK's `wrapper` (the run context), so the Runner hands it
        over; `add_items` reads the run's per-call usage from it."""
        await self._first_access()
        effective = resolve_session_limit(limit, self.session_settings)
        if branch_id is not None and branch_id != self.branch_id:
            other = branch_session_id(self.session_id, _branch_name(branch_id))
            return await self.store.load_context(other, effective)  # type: ignore[return-value]
        items = await self.store.load_context(self.active_session_id, effective)
        track_load(self.active_session_id, id(self.store), len(items), self._memo)
        return items  # type: ignore[return-value]

    async def add_items(
        self,
        items: list[TResponseInputItem],
        *,
        wrapper: RunContextWrapper[Any] | None = None,
    ) -> None:
        """Append items (all or nothing); with a manager, truncate and maybe compact.

        If the database goes away and the outcome is unknown, it retries once with the
        batch's idempotency token: the items are stored exactly once either way. The
        usage of the run's model calls since the last save (from `wrapper`) is stored
        with the calls the input filter recorded (`store.model_calls`), priced. The
        Runner's current agent is stored as the items' `agent` (user input: none).
        """
        await self._first_access()
        batch = item_list(items)  # read once: a retry must send the same items
        agent = producing_agent()  # messages.agent: the Runner's current agent, if any
        run = current_run(self.active_session_id, id(self.store))
        if run is not None:  # its calls' records first: each names the context it was sent
            await run.calls_written()
        try:
            await self._append(batch, None, agent)
        except StoreUnavailableError as error:
            if error.outcome_known or error.token is None:
                raise
            await self._append(batch, error.token, agent)
        track_save(self.active_session_id, id(self.store), len(batch))
        if wrapper is not None:
            await self._record_usage(wrapper)
        if self.manager is not None and batch:
            await self._compact_at_turn_boundary()

    async def _compact_at_turn_boundary(self) -> None:
        """The turn-boundary check. The items are stored by now: a compaction that kept
        losing to other writers (its `compact.error` event is stored) must not fail the
        run, or a caller retrying the turn would store it twice; the next pre-flight or
        turn boundary tries again."""
        assert self.manager is not None
        try:
            await self.manager.maybe_compact(self.active_session_id)
        except CompactionError as error:
            if error.reason is not CompactionErrorReason.CONFLICT:
                raise

    async def _append(
        self, items: Sequence[Mapping[str, Any]], token: str | None, agent: str | None
    ) -> None:
        await self.store.append(
            self.active_session_id, items, token=token, agent=agent, truncation=self.manager
        )

    async def _record_usage(self, wrapper: RunContextWrapper[Any]) -> None:
        run = current_run(self.active_session_id, id(self.store))
        if run is None:  # not inside a run that loaded this session: which calls are new?
            return
        entries = list(wrapper.usage.request_usage_entries)
        new = entries[run.usage_seen :]
        run.usage_seen = len(entries)
        pending = run.pending_calls[: len(new)]
        del run.pending_calls[: len(new)]
        usages = [
            CallUsage(
                input_tokens=entry.input_tokens,
                cached_tokens=entry.input_tokens_details.cached_tokens or 0,
                output_tokens=entry.output_tokens,
                reasoning_tokens=entry.output_tokens_details.reasoning_tokens or 0,
            )
            for entry in new
        ]
        # Each usage goes to its own call's record; a call whose record was never written
        # (and any usage beyond the pending calls) is stored as a call of unknown input.
        calls: list[tuple[int, str | None]] = []
        attached: list[CallUsage] = []
        lost: list[CallUsage] = []
        for (recorded, model), usage in zip(pending, usages, strict=False):
            if written(recorded):
                calls.append((recorded.result(), model))
                attached.append(usage)
            else:
                lost.append(usage)
        unknown = [*lost, *usages[len(pending) :]]  # pending holds at most one call a usage
        await self.store.record_usage(self.active_session_id, [*attached, *unknown], calls=calls)

    async def pop_item(
        self, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> TResponseInputItem | None:
        """Remove and return the newest item (recorded as a tombstone row)."""
        await self._first_access()
        return await self.store.pop(self.active_session_id)  # type: ignore[return-value]

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Empty the session, as the SDK's does: "main" gets a clear marker row, every other
        branch is deleted (a tombstone), and "main" becomes current."""
        await self._first_access()
        await self._delete_every_branch()
        await self.store.clear(self.session_id)

    async def get_items_as_of(
        self, point: HistoryPoint | int | datetime, limit: int | None = None
    ) -> list[TResponseInputItem]:
        """What `get_items` returned at an earlier point: a seq, a datetime or a
        HistoryPoint (`HistoryPoint.before_turn(3)`, `HistoryPoint.after_version(2)`)."""
        await self._first_access()
        items = await self.store.load_context(self.active_session_id, limit, as_of=point)
        return items  # type: ignore[return-value]

    async def rewind(self, to: HistoryPoint | int | datetime) -> Rewind:
        """Make the context what it was at `to`; the rewound items stay in history."""
        await self._first_access()
        return await self.store.rewind(self.active_session_id, to)

    async def run_compaction(
        self,
        args: OpenAIResponsesCompactionArgs | None = None,
        *,
        wrapper: RunContextWrapper[Any] | None = None,
    ) -> None:
        """The SDK's post-turn compaction hook: compact through the bound manager.

        The Runner calls it after each turn; `force` compacts now, otherwise the
        manager's trigger decides (an O(1) check). Without a manager it does nothing.
        """
        await self._first_access()
        if self.manager is None:
            return
        if args is not None and args.get("force"):
            await self.manager.compact(self.active_session_id, note="run_compaction(force=True)")
        else:
            await self.manager.maybe_compact(self.active_session_id)

    def close(self) -> Closing:
        """Close the store if this session created it (a path, an engine, from_url). A
        plain call closes it, as SQLiteSession's does; `await session.close()` also works.
        The session then refuses every call (SessionClosedError, a RuntimeError)."""
        self._closed = self._owns_store
        return Closing(self._close())

    async def _close(self) -> None:
        if self._owns_store:
            await self.store.close()


def _fixed_signatures(*methods: Any) -> None:
    """The Runner asks `inspect.signature` whether each history method takes `wrapper`, on
    every call (~0.16 ms a check of four): computed once, each check reads it back."""
    for method in methods:
        setattr(method, "__signature__", inspect.signature(method))  # noqa: B010


_fixed_signatures(
    SQLSession.get_items, SQLSession.add_items, SQLSession.pop_item, SQLSession.clear_session
)


def _own_store(
    path: str | PathLike[str] | None,
    engine: AsyncEngine | None,
    create_tables: bool | None,
    manager: CompactionManager | None,
) -> SessionStore:
    """The store a session opens for itself, with the defaults of the SDK store it mirrors."""
    if manager is not None:
        raise TypeError(
            "a manager brings its own store: pass SQLSession(id, manager=manager) without a "
            "path or engine"
        )
    if path is not None and engine is not None:
        raise TypeError("pass a database path or an engine, not both")
    if engine is not None:  # SQLAlchemySession: tables only when asked for
        return SessionStore(engine=engine, create_tables=bool(create_tables))
    assert path is not None
    location = os.fspath(path)
    url = "sqlite://" if location == ":memory:" else f"sqlite:///{location}"
    # SQLiteSession: creates its tables on first use
    return SessionStore(url, create_tables=True if create_tables is None else create_tables)
