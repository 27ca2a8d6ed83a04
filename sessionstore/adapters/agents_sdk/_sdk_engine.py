"""`SQLSession.from_url` on an in-memory SQLite URL, with an `engine` as the SDK's has.

The SDK's `SQLAlchemySession.from_url(id, url="sqlite+aiosqlite:///:memory:")` gives a private,
throwaway database whose `session.engine` runs SQL on it. An in-memory store of ours has a
single connection and no engine to share, so such a URL opens a private temporary file
instead: as private and as throwaway (removed when the store is collected or the process
exits), and `engine` works on it like on any file.
"""

from __future__ import annotations

import tempfile
import weakref
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url

from ... import SessionStore


def open_url_store(url: str | URL, **store_kwargs: Any) -> SessionStore:
    """The store `from_url` opens: on `url`, or for an in-memory SQLite URL on a private
    temporary file, removed with the store."""
    parsed = make_url(url)
    in_memory = parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")
    if not in_memory:
        return SessionStore(url, **store_kwargs)
    scratch = tempfile.TemporaryDirectory(prefix="sessionstore-memory-")
    file_url = parsed.set(database=str(Path(scratch.name) / "memory.db"))
    try:
        store = SessionStore(file_url, **store_kwargs)
    except BaseException:
        scratch.cleanup()
        raise
    weakref.finalize(store, scratch.cleanup)  # the directory lives as long as the store
    return store
