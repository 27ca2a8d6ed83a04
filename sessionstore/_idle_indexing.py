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
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Final

IDLE_S: Final = 0.2
MAX_BACKLOG: Final = 5_000
RETRY_S: Final = 5.0  # after a failed attempt (the file locked by another process, say)


class IdleIndexer:
    """Collects the sessions appends touched and has `index(sessions)` run on the writer
    once no append came for `idle_s` seconds (or `max_backlog` rows are waiting)."""

    def __init__(
        self,
        writer: Executor,
        index: Callable[[set[str]], object],
        *,
        idle_s: float | None = None,
        max_backlog: int | None = None,
    ) -> None:
        self._writer = writer
        self._index = index  # runs on the writer thread
        self._idle_s = IDLE_S if idle_s is None else idle_s
        self._max_backlog = MAX_BACKLOG if max_backlog is None else max_backlog
        self._wake = threading.Condition()
        self._sessions: set[str] = set()
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

    def close(self) -> set[str]:
        """Stop; the sessions still waiting, for the caller's last catch-up."""
        with self._wake:
            self._closed = True
            self._wake.notify()
            thread = self._thread
        if thread is not None:
            thread.join()
        with self._wake:
            left, self._sessions = self._sessions, set()
        return left

    def _run(self) -> None:
        while True:
            with self._wake:
                sessions = self._due()
                if sessions is None:
                    return
            try:
                self._writer.submit(self._index, sessions).result()
            except Exception:  # kept for a later attempt; a search catches up anyway
                with self._wake:
                    self._sessions |= sessions
                    self._last_write = time.monotonic() + RETRY_S

    def _due(self) -> set[str] | None:
        """Wait (holding the lock) until indexing is due; the sessions to index, or None
        once closed."""
        while not self._closed:
            if not self._sessions:
                self._wake.wait()
                continue
            wait = self._last_write + self._idle_s - time.monotonic()
            if wait > 0 and self._rows < self._max_backlog:
                self._wake.wait(wait)
                continue
            sessions, self._sessions, self._rows = self._sessions, set(), 0
            return sessions
        return None
