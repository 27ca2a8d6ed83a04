"""When SQLite's writer indexes what appends left for the full-text index: once it is idle.

Agents append between model calls, seconds apart, so the writer is idle most of the time:
indexing then costs no append anything. A writer that never idles still indexes once its
backlog passes `max_backlog` rows, in one transaction (cheaper per row than any append's
share was). A failed attempt keeps its sessions for a later one; a search catches up
everything first anyway, so nothing is ever missing from results.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Final

IDLE_S: Final = 0.2
MAX_BACKLOG: Final = 5_000
RETRY_S: Final = 5.0  # after a failed attempt (the file locked by another process, say)


class IdleIndexer:
    """Collects the sessions appends touched and has `index(sessions)` run once no append
    came for `idle_s` seconds (or `max_backlog` rows are waiting). The first run of a store
    is `index(None)`: every session, so rows a killed process left unindexed are indexed too.

    It holds its store's `index` weakly: a store nobody closed is still collected (its
    threads with it), and `stop` (a finalizer of the store) ends the thread."""

    def __init__(
        self,
        index: Callable[[set[str] | None], object],
        *,
        idle_s: float | None = None,
        max_backlog: int | None = None,
    ) -> None:
        self._index = weakref.WeakMethod(index)  # a bound method of the store
        self._idle_s = IDLE_S if idle_s is None else idle_s
        self._max_backlog = MAX_BACKLOG if max_backlog is None else max_backlog
        self._wake = threading.Condition()
        self._sessions: set[str] = set()
        self._swept = False  # whether every session was looked at once
        self._rows = 0
        self._last_write = 0.0
        self._closed = False
        self._thread: threading.Thread | None = None

    def wrote(self, session_id: str, rows: int) -> None:
        """An append of `rows` rows to `session_id` committed."""
        with self._wake:
            if self._closed:
                return
            first = not self._sessions
            self._sessions.add(session_id)
            self._rows += rows
            self._last_write = time.monotonic()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="sessionstore-sqlite-indexer", daemon=True
                )
                self._thread.start()
            elif first or self._rows >= self._max_backlog:
                self._wake.notify()

    def stop(self) -> None:
        """End the thread without waiting for it."""
        with self._wake:
            self._closed = True
            self._wake.notify()

    def close(self) -> tuple[set[str], bool] | None:
        """Stop and wait; what is still to index for the caller's last catch-up: (sessions,
        whether every session must be looked at), or None for nothing."""
        self.stop()
        thread = self._thread
        if thread is not None:
            thread.join()
        with self._wake:
            left, self._sessions = self._sessions, set()
            if not left:
                return None
            return left, not self._swept

    def _run(self) -> None:
        while True:
            with self._wake:
                due = self._due()
            index = self._index()
            if due is None or index is None:  # closed, or the store was collected
                return
            sessions, everything = due
            try:
                index(None if everything else sessions)
            except Exception:  # kept for a later attempt; a search catches up anyway
                with self._wake:
                    self._sessions |= sessions
                    self._swept = self._swept and not everything
                    self._last_write = time.monotonic() + RETRY_S
            del index

    def _due(self) -> tuple[set[str], bool] | None:
        """Wait (holding the lock) until indexing is due: the sessions to index and whether
        to look at every session; None once closed."""
        while not self._closed:
            if not self._sessions:
                self._wake.wait()
                continue
            wait = self._last_write + self._idle_s - time.monotonic()
            if wait > 0 and self._rows < self._max_backlog:
                self._wake.wait(wait)
                continue
            sessions, self._sessions, self._rows = self._sessions, set(), 0
            everything, self._swept = not self._swept, True
            return sessions, everything
        return None
