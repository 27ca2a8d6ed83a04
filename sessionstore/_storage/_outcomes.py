"""How a transaction's outcome reaches the task awaiting it, whatever thread ran it.

A write runs to completion even when its caller is cancelled (a write cut off half-way
would leave the caller unsure whether it happened); an outcome computed on a worker thread
wakes the event loop that waits for it; a store opened read-only refuses a write before it
reaches the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, Future
from functools import partial
from typing import Any, Final, TypeVar

from .._errors import (
    ReadOnlyStoreError,
)

# Every wait inside the store (a pool checkout, a statement, a lock) ends by this default.
DEFAULT_TIMEOUT_S: Final = 60.0

_T = TypeVar("_T")


class _WriteOutcome(asyncio.Future[_T]):
    """The outcome of a write, which a cancelled caller cannot cut short.

    A write cut off half-way would leave the caller unsure whether it happened.
    `cancel` refuses, so asyncio throws the caller's CancelledError into it only
    once the write has finished and its outcome is knowable. Cheaper than looping
    on `asyncio.wait`, which matters on the append hot path.
    """

    def __init__(self, work: Future[_T] | asyncio.Future[_T], loop: asyncio.AbstractEventLoop):
        super().__init__(loop=loop)
        self._work = work  # a task is otherwise only weakly referenced by the loop

    def cancel(self, msg: Any | None = None) -> bool:
        return False


def finish_despite_cancellation(work: Awaitable[_T]) -> asyncio.Future[_T]:
    """Await `work` (a coroutine gets a Task) to the end even if the caller is cancelled."""
    job = asyncio.ensure_future(work)
    outcome = _WriteOutcome(job, job.get_loop())
    job.add_done_callback(partial(_settle, outcome))
    return outcome


def on_thread(executor: Executor, job: Callable[[], _T]) -> asyncio.Future[_T]:
    """Run `job` on `executor`, awaited to the end even if the caller is cancelled."""
    return outcome_of(executor.submit(job))


def outcome_of(work: Future[_T]) -> asyncio.Future[_T]:
    """The running loop's view of a worker thread's `work`, which a cancel cannot cut short."""
    loop = asyncio.get_running_loop()
    outcome = _WriteOutcome(work, loop)
    work.add_done_callback(partial(_hand_over, loop, outcome))
    return outcome


def _hand_over(
    loop: asyncio.AbstractEventLoop, outcome: asyncio.Future[_T], done: Future[_T]
) -> None:
    """On the worker thread: pass the finished job's outcome to the loop."""
    bell = _doorbells.get(loop)
    if bell is None:
        with _doorbells_lock:
            bell = _doorbells.setdefault(loop, _Doorbell(loop))
    bell.ring(outcome, done)


class _Doorbell:
    """Outcomes finished on worker threads, handed to one loop in one wake-up: a group commit
    settles many appends at once, and every `call_soon_threadsafe` is a write to the loop's
    self-pipe (a system call) and a pass of the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)  # the registry's key: a strong one would keep it alive
        self._mutex = threading.Lock()
        self._ready: list[tuple[asyncio.Future[Any], Future[Any]]] = []

    def ring(self, outcome: asyncio.Future[Any], done: Future[Any]) -> None:
        with self._mutex:
            self._ready.append((outcome, done))
            if len(self._ready) > 1:  # already rung: the loop will take this one too
                return
        loop = self._loop()
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # closed meanwhile: nobody awaits these
                loop.call_soon_threadsafe(self._answer)
                return
        with self._mutex:
            self._ready.clear()

    def _answer(self) -> None:
        with self._mutex:
            ready, self._ready = self._ready, []
        for outcome, done in ready:
            _settle(outcome, done)


_doorbells: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Doorbell] = (
    weakref.WeakKeyDictionary()
)
_doorbells_lock = threading.Lock()


def _settle(outcome: asyncio.Future[_T], done: Future[_T] | asyncio.Future[_T]) -> None:
    """Copy a finished write's outcome (retrieving any error, so none is reported unhandled)."""
    if done.cancelled():  # the loop or the executor shut down under it
        outcome.set_exception(asyncio.CancelledError())
    elif (error := done.exception()) is not None:
        outcome.set_exception(error)
    else:
        outcome.set_result(done.result())


def written_session(args: tuple[Any, ...]) -> str | None:
    """The session a transaction function writes, from its first argument: the session id
    itself, or what it writes (a batch, a compaction) naming it."""
    first = args[0] if args else None
    named = first if isinstance(first, str) else getattr(first, "session_id", None)
    return named if isinstance(named, str) else None


def check_writable(read_only: bool, where: str) -> None:
    """Refuse a write on a store opened read-only, before it reaches the database."""
    if read_only:
        raise ReadOnlyStoreError(
            f"the store on {where} was opened read-only; open it without read_only=True to write"
        )
