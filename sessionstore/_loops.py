"""Concurrency that works from any thread and any event loop, with bounded waits.

Applications share one store between threads that each run their own event loop
(`asyncio.run` per request in a sync web server, `Runner.run_sync` in a thread
pool, a loop per test). asyncio's primitives and drivers bind to the first loop
that uses them, so the store never keeps one across loops: its locks are
`LoopSafeLock`s and its loop-bound resources (connection pools, async engines)
live in a `PerLoop`, one per loop, closed when that loop shuts down.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Generic, ParamSpec, TypeVar

from ._errors import StoreTimeoutError

# Rows past which Python work over them (a read's decoding and hashing, a compaction's
# planning and write) leaves the event loop's thread: below it a thread hop costs more than
# the work stalls the loop (a few hundred rows take ~1 ms; 100,000 stalled it 300 ms and
# more, issue #34). The store and compaction share it.
BIG_ROWS: Final = 2_000

_T = TypeVar("_T")
_P = ParamSpec("_P")
_CLOSE_TIMEOUT_S = 5.0  # closing another loop's resource never holds up a close for longer


def _grant(waiter: asyncio.Future[None]) -> None:
    """On the waiter's loop: wake it (a waiter cancelled meanwhile releases in its handler)."""
    if not waiter.done():
        waiter.set_result(None)


class LoopSafeLock:
    """A mutex that coroutines on any loop, in any thread, can await with a bounded wait.

    Ownership passes to the next waiter at release (first come, first served); a
    waiter that timed out or was cancelled after being chosen passes it on, so
    the lock is never stranded.
    """

    def __init__(self, what: str) -> None:
        self.what = what  # named in timeout errors: "waited 30 s for <what>"
        self._mutex = threading.Lock()
        self._held = False
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    def locked(self) -> bool:
        """Whether some task holds the lock."""
        return self._held

    async def acquire(self, wait_s: float) -> None:
        """Take the lock, waiting at most `wait_s` seconds (StoreTimeoutError after that)."""
        loop = asyncio.get_running_loop()
        with self._mutex:
            if not self._held:
                self._held = True
                return
            entry = (loop, loop.create_future())
            self._waiters.append(entry)
        try:
            async with asyncio.timeout(wait_s):  # unlike wait_for, never swallows a cancel
                await entry[1]
        except BaseException as error:
            with self._mutex:
                chosen = entry not in self._waiters
                if not chosen:
                    self._waiters.remove(entry)
            if chosen:  # ownership arrived as we gave up: hand it on
                self.release()
            if isinstance(error, TimeoutError):
                raise StoreTimeoutError(
                    f"waited {wait_s:g} s for {self.what}; another task held it all that time"
                ) from None
            raise

    def release(self) -> None:
        """Hand the lock to the oldest waiter whose loop still runs, or free it."""
        with self._mutex:
            while self._waiters:
                loop, waiter = self._waiters.popleft()
                try:
                    loop.call_soon_threadsafe(_grant, waiter)
                except RuntimeError:  # that loop closed: its waiter is gone
                    continue
                return
            self._held = False

    @contextlib.asynccontextmanager
    async def hold(self, wait_s: float) -> AsyncIterator[None]:
        """`async with lock.hold(wait_s):` the lock for the block."""
        await self.acquire(wait_s)
        try:
            yield
        finally:
            self.release()


class KeyedLocks:
    """One LoopSafeLock per key (e.g. per session), created on first use."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._locks: dict[str, LoopSafeLock] = {}
        self._mutex = threading.Lock()

    def __call__(self, key: str) -> LoopSafeLock:
        with self._mutex:
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = LoopSafeLock(f"{self._what} {key!r}")
            return lock


@dataclass
class _Entry(Generic[_T]):
    resource: _T
    closer: AsyncGenerator[None, None] | None = None  # registered with the loop's shutdown


class PerLoop(Generic[_T]):
    """One resource per event loop: made on first use there, closed with it.

    The resource is closed when its loop shuts down (`asyncio.run`, `Runner.run_sync`
    and pytest-asyncio all shut down async generators, which is the hook used
    here), when the owner calls `close_all`, or, for a loop that was closed
    without that shutdown, abandoned (closed without awaiting) on the next use.
    """

    def __init__(
        self,
        make: Callable[[], _T],
        close: Callable[[_T], Awaitable[None]],
        abandon: Callable[[_T], None],
    ) -> None:
        self._make = make
        self._close = close
        self._abandon = abandon
        self._entries: dict[asyncio.AbstractEventLoop, _Entry[_T]] = {}
        self._mutex = threading.Lock()

    def current(self) -> _T:
        """The running loop's resource (made now if this loop has none)."""
        loop = asyncio.get_running_loop()
        with self._mutex:
            entry = self._entries.get(loop)
            if entry is not None:
                return entry.resource
            stale = [old for old in self._entries if old.is_closed()]
            abandoned = [self._entries.pop(old).resource for old in stale]
            entry = self._entries[loop] = _Entry(self._make())
        for resource in abandoned:
            self._abandon(resource)
        self._close_at_shutdown(loop, entry)
        return entry.resource

    def existing(self) -> list[_T]:
        """Every resource made so far (on any loop)."""
        with self._mutex:
            return [entry.resource for entry in self._entries.values()]

    def _close_at_shutdown(self, loop: asyncio.AbstractEventLoop, entry: _Entry[_T]) -> None:
        if getattr(loop, "_asyncgens_shutdown_called", False):
            return  # a loop kept open after its shutdown (run_sync's): closed by close_all
        entry.closer = self._closer(loop, entry)
        # Starting the generator registers it with this loop; the loop's shutdown_asyncgens()
        # then closes it, which runs its `finally` on the loop while the loop still runs.
        loop.create_task(_start(entry.closer))

    async def _closer(
        self, loop: asyncio.AbstractEventLoop, entry: _Entry[_T]
    ) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if self._take(loop, entry):
                await self._close(entry.resource)

    def _take(self, loop: asyncio.AbstractEventLoop, entry: _Entry[_T]) -> bool:
        """Remove `loop`'s entry if it is still `entry`; True if this caller must close it."""
        with self._mutex:
            if self._entries.get(loop) is not entry:
                return False
            del self._entries[loop]
            return True

    async def _closing(self, resource: _T) -> None:
        await self._close(resource)

    async def close_all(self) -> None:
        """Close every loop's resource: here, on its own running loop, or abandoned."""
        here = asyncio.get_running_loop()
        with self._mutex:
            entries = list(self._entries.items())
        for loop, entry in entries:
            if loop is here and entry.closer is not None:
                await entry.closer.aclose()  # once started, its `finally` takes and closes it
            if not self._take(loop, entry):
                continue  # its loop's shutdown got there first
            if loop is here:
                await self._close(entry.resource)
            elif loop.is_running() and not loop.is_closed():
                future = asyncio.run_coroutine_threadsafe(self._closing(entry.resource), loop)
                try:
                    await asyncio.wait_for(asyncio.wrap_future(future), _CLOSE_TIMEOUT_S)
                except (TimeoutError, RuntimeError):
                    self._abandon(entry.resource)
            else:
                self._abandon(entry.resource)


async def _start(generator: AsyncGenerator[None, None]) -> None:
    await anext(generator, None)


async def off_loop_if(
    big: bool, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs
) -> _T:
    """`fn(*args, **kwargs)`: on a worker thread when `big` (Python work over more than
    BIG_ROWS rows, in this context, as `asyncio.to_thread` copies it: a redaction hook may
    read context variables), in place otherwise, where a thread hop would cost more."""
    if big:
        return await asyncio.to_thread(fn, *args, **kwargs)
    return fn(*args, **kwargs)
