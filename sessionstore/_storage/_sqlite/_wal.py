"""Switching a SQLite file to WAL, which two connections to a new file may not do at once.

Every connection of a store asks for WAL as it opens. On a file that is already WAL that is a
no-op; on a new file it rewrites the header under an exclusive lock, and when two
connections (two stores' first writes, a store's writer and its reader) ask at the same
moment, each holding the shared lock the other needs, SQLite breaks the deadlock by
answering one of them "database is locked" at once, without calling its busy handler. That
answer means "try again", not "someone held the lock for the whole busy timeout".
"""

from __future__ import annotations

import sqlite3
import time
from typing import Final

from ..._errors import StoreTimeoutError

_RETRY_PAUSE_S: Final = 0.005


def enter_wal(cursor: sqlite3.Cursor, patience_s: float, where: str | None) -> None:
    """`PRAGMA journal_mode = WAL`, tried again while SQLite answers "locked", for up to
    `patience_s` (the store's timeout_s: another store is creating the file)."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error):
                raise
            if time.monotonic() >= deadline:
                raise StoreTimeoutError(
                    f"waited {patience_s:g} s to switch the SQLite file {where} to WAL: "
                    "another process held it locked all that time (raise timeout_s to wait "
                    "longer)"
                ) from None
        time.sleep(_RETRY_PAUSE_S)
