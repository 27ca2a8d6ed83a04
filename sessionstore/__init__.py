"""sessionstore: a storage-centric session store for LLM agents with automatic compaction.

The core (SessionStore) does not need the Agents SDK; `SQLSession` does, and is
imported lazily so `import sessionstore` works without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    InvalidItemError,
    SchemaError,
    SchemaMissingError,
    SchemaOutdatedError,
    SchemaTooNewError,
    SessionStoreError,
    StoreTimeoutError,
    UnsupportedURLError,
)
from .rows import SessionInfo, StoredRow
from .store import SessionStore

if TYPE_CHECKING:
    from .adapters.agents_sdk import SQLSession

__all__ = [
    "InvalidItemError",
    "SQLSession",
    "SchemaError",
    "SchemaMissingError",
    "SchemaOutdatedError",
    "SchemaTooNewError",
    "SessionInfo",
    "SessionStore",
    "SessionStoreError",
    "StoreTimeoutError",
    "StoredRow",
    "UnsupportedURLError",
]


def __getattr__(name: str) -> Any:
    if name == "SQLSession":
        from .adapters.agents_sdk import SQLSession

        return SQLSession
    raise AttributeError(f"module 'sessionstore' has no attribute {name!r}")
