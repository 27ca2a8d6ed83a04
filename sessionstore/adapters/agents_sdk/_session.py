"""SQLSession: the OpenAI Agents SDK `Session` protocol over a SessionStore.

A drop-in for the SDK's SQLiteSession / SQLAlchemySession:
`Runner.run(agent, input, session=SQLSession("user-42", store))`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any

from agents.memory.session_settings import (
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from ... import SessionStore, StoreUnavailableError, check_session_id, item_list
from ._observer import watch_runs
from ._tracking import track_load, track_save

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory.session import OpenAIResponsesCompactionArgs
    from agents.run_context import RunContextWrapper

    from ...compaction import CompactionManager


class SQLSession:
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
        *,
        engine: AsyncEngine | None = None,
        create_tables: bool | None = None,
        manager: CompactionManager | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        owns_store: bool = False,
    ) -> None:
        check_session_id(session_id)
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
        if store is None and manager is None:
            raise TypeError(
                "SQLSession needs a store: a SessionStore, a SQLite file path, engine=..., "
                "or a manager (whose store it uses)"
            )
        if store is not None and manager is not None and manager.store is not store:
            raise ValueError(
                "the manager compacts a different SessionStore than this session writes to; "
                "pass manager=CompactionManager(CompactionConfig(store=store)) for this store"
            )
        self.session_id = session_id
        self.manager = manager
        self.store: SessionStore = store if store is not None else manager.store  # type: ignore[union-attr]
        self.session_settings: SessionSettings | None = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        self._owns_store = owns_store
        if manager is not None:
            watch_runs(manager)

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
        **store_kwargs: Any,
    ) -> SQLSession:
        """Same call shape as the SDK's `SQLAlchemySession.from_url`; owns its own store."""
        store = SessionStore(
            url, create_tables=create_tables, engine_kwargs=engine_kwargs, **store_kwargs
        )
        return cls(session_id, store, session_settings=session_settings, owns_store=True)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The active context; `limit` (or session_settings.limit) keeps the newest N."""
        effective = resolve_session_limit(limit, self.session_settings)
        items = await self.store.load_context(self.session_id, effective)
        track_load(self.session_id, id(self.store), len(items))
        return items  # type: ignore[return-value]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items (all or nothing); with a manager, truncate and maybe compact.

        If the database goes away and the outcome is unknown, it retries once with the
        batch's idempotency token: the items are stored exactly once either way.
        """
        batch = item_list(items)  # read once: a retry must send the same items
        try:
            await self._append(batch, None)
        except StoreUnavailableError as error:
            if error.outcome_known or error.token is None:
                raise
            await self._append(batch, error.token)
        track_save(self.session_id, id(self.store), len(batch))
        if self.manager is not None and batch:
            await self.manager.maybe_compact(self.session_id)

    async def _append(self, items: Sequence[Mapping[str, Any]], token: str | None) -> None:
        if self.manager is None:
            await self.store.append(self.session_id, items, token=token)
        else:
            await self.manager.append(self.session_id, items, token=token)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (recorded as a tombstone row)."""
        return await self.store.pop(self.session_id)  # type: ignore[return-value]

    async def clear_session(self) -> None:
        """Empty the active context (recorded as a clear marker row)."""
        await self.store.clear(self.session_id)

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
        if self.manager is None:
            return
        if args is not None and args.get("force"):
            await self.manager.compact(self.session_id, note="run_compaction(force=True)")
        else:
            await self.manager.maybe_compact(self.session_id)

    async def close(self) -> None:
        """Close the store if this session created it (from_url)."""
        if self._owns_store:
            await self.store.close()


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
