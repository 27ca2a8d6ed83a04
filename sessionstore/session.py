"""SQLSession: the OpenAI Agents SDK `Session` protocol over a SessionStore.

A drop-in for the SDK's SQLiteSession / SQLAlchemySession:
`Runner.run(agent, input, session=SQLSession("user-42", store))`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents.memory.session_settings import (
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)
from sqlalchemy.engine import URL

from .compaction.tracking import track_load, track_save
from .store import SessionStore

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

    from .compaction.service import CompactManager


class SQLSession:
    """One conversation's memory, stored as append-only rows.

    Many SQLSession objects can share one SessionStore (one connection pool).
    Bound to a CompactManager, it truncates large tool outputs as they are
    stored and compacts at turn boundaries when the context crosses the trigger.
    """

    def __init__(
        self,
        session_id: str,
        store: SessionStore | None = None,
        *,
        manager: CompactManager | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        owns_store: bool = False,
    ) -> None:
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, got {type(session_id).__name__}")
        if store is None and manager is None:
            raise TypeError("SQLSession needs a store, a manager (whose store it uses), or both")
        if store is not None and manager is not None and manager.store is not store:
            raise ValueError(
                "the manager compacts a different SessionStore than this session writes to; "
                "pass manager=CompactManager(CompactConfig(storage=store)) for this store"
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
        """Append items (all or nothing); with a manager, truncate and maybe compact."""
        if self.manager is None:
            await self.store.append(self.session_id, items)
        else:
            await self.manager.append(self.session_id, items)
        track_save(self.session_id, id(self.store), len(items))
        if self.manager is not None and items:
            await self.manager.maybe_compact(self.session_id)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (recorded as a tombstone row)."""
        return await self.store.pop(self.session_id)  # type: ignore[return-value]

    async def clear_session(self) -> None:
        """Empty the active context (recorded as a clear marker row)."""
        await self.store.clear(self.session_id)

    async def close(self) -> None:
        """Close the store if this session created it (from_url)."""
        if self._owns_store:
            await self.store.close()
