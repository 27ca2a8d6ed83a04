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

from .store import SessionStore

if TYPE_CHECKING:
    from agents.items import TResponseInputItem


class SQLSession:
    """One conversation's memory, stored as append-only rows.

    Many SQLSession objects can share one SessionStore (one connection pool).
    """

    def __init__(
        self,
        session_id: str,
        store: SessionStore,
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        owns_store: bool = False,
    ) -> None:
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, got {type(session_id).__name__}")
        self.session_id = session_id
        self.store = store
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
        return await self.store.load_context(self.session_id, effective)  # type: ignore[return-value]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items (all or nothing)."""
        await self.store.append(self.session_id, items)

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
