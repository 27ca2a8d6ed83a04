"""Which part of a running agent's model input is already stored.

The Agents SDK loads the session once per run, saves the new input before the
first model call and new items after each step, but keeps building each model
input from its own copy of the history. `SQLSession` records, in a context
variable of the run's task, how many items it returned and how many were saved
since; the input filter uses that to count only unsaved items (the stored part
comes from the session's running total) and, once the stored context was
compacted, to rebuild the input from the store. The session's `MemoSlot` rides along,
so the digest and hygiene of its inputs carry over from call to call and run to run.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from dataclasses import dataclass, field

from ._input_memo import MemoSlot


@dataclass
class RunTracking:
    """One run's view of one session."""

    session_id: str
    store_id: int  # id() of the SessionStore, so a filter never mixes up two stores
    history_len: int  # items get_items returned at the start of the run
    memo: MemoSlot  # the session's: what earlier model inputs' digest and hygiene were
    saved: int = 0  # items add_items stored since
    compacted: bool = False  # the stored context changed under the SDK's copy
    # Model calls recorded by the input filter, (row id, model), awaiting their usage (a
    # record may still be being written while its call goes out); and how many of the run's
    # per-request usage entries were already stored.
    pending_calls: list[tuple[asyncio.Future[int], str | None]] = field(default_factory=list)
    usage_seen: int = 0
    # Records whose failure was raised already (each is raised once).
    _reported: set[asyncio.Future[int]] = field(default_factory=set, init=False, repr=False)

    async def calls_written(self) -> None:
        """Wait for the call records still being written. One that failed is raised here,
        once; one that was itself cancelled raises nothing (the caller was not cancelled,
        and a CancelledError here would read as if it had been). Either stays in place as a
        call without a record, so the usage that follows still goes to its own call (its own
        usage is stored as a call of unknown input)."""
        failed: BaseException | None = None
        for recorded, _ in self.pending_calls:
            try:
                await asyncio.shield(recorded)  # a cancelled caller leaves the write running
            except asyncio.CancelledError:
                if not recorded.cancelled():
                    raise  # the caller was cancelled, not the record
            except Exception as error:
                if failed is None and recorded not in self._reported:
                    self._reported.add(recorded)
                    failed = error
        if failed is not None:
            raise failed

    @property
    def stored_prefix(self) -> int:
        """How many leading items of the SDK's model input are in the store."""
        return self.history_len + self.saved


def written(recorded: asyncio.Future[int]) -> bool:
    """Whether a pending call's record was written (its row id can take the usage)."""
    return recorded.done() and not recorded.cancelled() and recorded.exception() is None


_current: ContextVar[RunTracking | None] = ContextVar("sessionstore_run", default=None)


def track_load(session_id: str, store_id: int, count: int, memo: MemoSlot) -> None:
    """A session was loaded: a run (or a caller) starts from `count` stored items."""
    _current.set(RunTracking(session_id, store_id, count, memo))


def track_save(session_id: str, store_id: int, count: int) -> None:
    """`count` items of the current run were stored."""
    run = current_run(session_id, store_id)
    if run is not None:
        run.saved += count


def mark_compacted(session_id: str, store_id: int) -> None:
    """The stored context no longer matches the run's own copy (compacted, or tool outputs
    truncated at write time): later model inputs must be rebuilt from the store."""
    run = current_run(session_id, store_id)
    if run is not None:
        run.compacted = True


def current_run(session_id: str | None = None, store_id: int | None = None) -> RunTracking | None:
    """The run tracked in this task, optionally only if it is for that session and store."""
    run = _current.get()
    if run is None:
        return None
    if session_id is not None and run.session_id != session_id:
        return None
    if store_id is not None and run.store_id != store_id:
        return None
    return run
