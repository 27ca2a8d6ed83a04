"""A SQLite store's writer thread, whose connection another thread may borrow while it idles.

Every write runs on one thread over one connection. A write that needs no fsync (a model
call's record) is cheaper run where its caller already is: on this VM a hop to an idle
thread and back costs 0.3-0.8 ms after CPU-heavy work, several times the write itself
(docs/PERFORMANCE.md). The thread holds a lock over the connection for each job it runs, so
a borrower that takes the lock without waiting knows the connection is its own until it
lets go, and a job queued meanwhile waits for it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

_T = TypeVar("_T")


class WriterThread(Executor):
    """One worker thread; each job runs holding the connection's lock."""

    def __init__(self, name: str) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name)
        self._connection = threading.Lock()

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        return self._pool.submit(self._holding, fn, args, kwargs)

    def _holding(self, fn: Callable[..., _T], args: tuple[Any, ...], kw: dict[str, Any]) -> _T:
        with self._connection:
            return fn(*args, **kw)

    @contextlib.contextmanager
    def borrowed(self) -> Iterator[bool]:
        """Whether the connection is the caller's for the block: True only if the thread was
        idle at once (never waits; False: queue the work instead)."""
        free = self._connection.acquire(blocking=False)
        try:
            yield free
        finally:
            if free:
                self._connection.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait, cancel_futures=cancel_futures)
