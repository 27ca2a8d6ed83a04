"""`SQLSession.close()` as the SDK's stores have it: a plain call closes.

`SQLiteSession.close()` is synchronous, and ported programs call it bare; the store's
own close is a coroutine. So close() starts the work at once: outside an event loop it
runs it to the end before returning; inside one it schedules it on that loop. Either way
the result may also be awaited (`await session.close()`), which waits for the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any


async def _nothing() -> None:
    return None


class Closing:
    """A close already under way, which `await` waits for."""

    def __init__(self, work: Coroutine[Any, Any, None]) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a bare call from synchronous code: close now
            asyncio.run(work)
            self._task: asyncio.Task[None] | None = None
        else:
            self._task = loop.create_task(work)

    def __await__(self) -> Generator[Any, None, None]:
        return (self._task if self._task is not None else _nothing()).__await__()
