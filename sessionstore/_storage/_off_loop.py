"""CPU-heavy work inside a transaction, kept off the event loop's thread.

A PostgreSQL transaction function runs through SQLAlchemy's asyncpg adapter in a greenlet
on the loop's thread, so encoding a 50 MB archive there stalled every task of the loop
for as long (issue #34). There, the work goes to a worker thread and the greenlet waits
for it (the transaction stays open, the loop runs on). On SQLite the function already
runs on the store's writer thread, and the work runs in place.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from sqlalchemy.util import await_only
from sqlalchemy.util.concurrency import in_greenlet

from .._loops import BIG_ROWS

__all__ = ["let_loop_run", "off_loop", "off_loop_past"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


def off_loop(fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """`fn(*args, **kwargs)`, on a worker thread when called from a greenlet on a loop."""
    if in_greenlet():
        return await_only(asyncio.to_thread(fn, *args, **kwargs))
    return fn(*args, **kwargs)


def off_loop_past(rows: int, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """`fn(*args, **kwargs)` for work over `rows` rows: off the loop's thread for a big
    read (see off_loop), in place below that, where a thread hop would cost more."""
    if rows > BIG_ROWS:
        return off_loop(fn, *args, **kwargs)
    return fn(*args, **kwargs)


def let_loop_run() -> None:
    """Give the loop a turn between chunks of work a greenlet does on the loop's thread
    (driver-bound work that cannot leave it); a no-op anywhere else."""
    if in_greenlet():
        await_only(asyncio.sleep(0))
