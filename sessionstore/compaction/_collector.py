"""Keep the cyclic garbage collector from walking a compaction's objects again and again.

A full collection walks every tracked object with the GIL held, whichever thread starts it.
Compacting a 100,000-item session holds ~500,000 of them (rows, units, the summarizer's
entries and facts) besides the application's own, and its allocations start a full
collection each time the oldest generation grew by a quarter: a dozen walks of 100-700 ms,
each one a stall of the event loop (issue #34).

`gc.freeze()` moves every tracked object into a generation no collection walks (an O(1)
splice; refcounting still frees them). Frozen when a compaction starts, after its big
allocation phases (the read, the plan) and after every collection of the middle generation
(what survives one is what the summarizer keeps for a minute), the oldest generation stays
nearly empty and no collection walks more than a few thousand objects. Meanwhile only young
cycles are collected; one that outlived ~7,000 allocations is collected after the thaw:
`gc.unfreeze()` (O(1) too) when the last compaction of the process ends. An application that
froze objects itself (a pre-fork server) is left alone: unfreezing would undo its freeze. (One
that freezes while a compaction runs is thawed with it; and a process that is never without a
running compaction collects its old cycles only once it is.)
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["freeze_more", "snapshot_frozen"]

_lock = threading.Lock()
_depth = 0  # compactions under way in the process
_ours = False  # whether they froze (nobody else had)


@contextlib.contextmanager
def snapshot_frozen() -> Iterator[None]:
    """While any compaction of the process runs, what survives is frozen (see the module)."""
    global _depth, _ours
    with _lock:
        if _depth == 0:
            _ours = gc.get_freeze_count() == 0
            if _ours:
                gc.callbacks.append(_refreeze)
        _depth += 1
        if _ours:
            gc.freeze()
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _ours:
                gc.unfreeze()  # first: nothing below may leave the process frozen
                with contextlib.suppress(ValueError):  # an application cleared the callbacks
                    gc.callbacks.remove(_refreeze)
                _ours = False


def freeze_more() -> None:
    """After a phase that made much that stays alive: freeze it too (a no-op unless the
    compactions under way froze)."""
    with _lock:
        if _ours:
            gc.freeze()


def _refreeze(phase: str, info: dict[str, int]) -> None:
    """After a collection of the middle or the oldest generation: what survived it is frozen,
    never walked again meanwhile (an O(1) splice, about every 7,000 allocations).

    It runs in whichever thread collected, so it freezes only under the lock and only while
    compactions that froze still run: a collection that began just before the last one
    ended must not freeze the process for good. The lock is never waited for (the thread
    that collected may hold it)."""
    if phase != "stop" or info["generation"] < 1 or not _lock.acquire(blocking=False):
        return
    try:
        if _ours and _depth > 0:
            gc.freeze()
    finally:
        _lock.release()
