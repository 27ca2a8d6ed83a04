"""A compaction's Python work over a big context, kept off the event loop's thread.

Grouping, planning, building the summarizer's request, scrubbing the summary and building
the write each walk every row of the context: over a 100,000-item session each took
100-600 ms of pure Python on the loop's thread (issue #34). Past `_loops.BIG_ROWS` rows (the
store's threshold too) they run on a worker thread (in this context, as `asyncio.to_thread`
copies it: a redaction hook may read context variables); below it a thread hop would cost
more than the stall it saves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["off_loop_if"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


async def off_loop_if(
    big: bool, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs
) -> _T:
    """`fn(*args, **kwargs)`: on a worker thread when `big`, in place otherwise."""
    if big:
        return await asyncio.to_thread(fn, *args, **kwargs)
    return fn(*args, **kwargs)
