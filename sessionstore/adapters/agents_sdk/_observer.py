"""The SDK side of a compaction: the run's own copy goes stale, the trace shows it.

`watch_runs(manager)` subscribes one observer per manager: when the manager rewrites a
stored context (a compaction, or a tool output truncated as it is stored), the run in
the current task is marked so the input filter rebuilds the model input from the
store; a committed compaction also appears in the SDK's own trace when one is active.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.tracing import custom_span, get_current_trace

from ._tracking import mark_compacted

if TYPE_CHECKING:
    from ...compaction import CompactionManager, CompactionResult


class RunObserver:
    """Marks the current run's copy stale; traces committed compactions."""

    def __init__(self, store_id: int) -> None:
        self._store_id = store_id

    def __eq__(self, other: object) -> bool:  # one per store, however often subscribed
        return isinstance(other, RunObserver) and other._store_id == self._store_id

    def __hash__(self) -> int:
        return hash(self._store_id)

    def context_rewritten(self, session_id: str) -> None:
        mark_compacted(session_id, self._store_id)

    def compacted(self, session_id: str, result: CompactionResult, strategy: str) -> None:
        if get_current_trace() is None:
            return
        data = {
            "session_id": session_id,
            "version": result.version,
            "compaction_id": result.compaction_id,
            "tokens_after": result.tokens_after,
            "items_after": result.items_after,
            "strategy": strategy,
        }
        with custom_span("sessionstore.compaction", data=data):
            pass


def watch_runs(manager: CompactionManager) -> None:
    """Subscribe the SDK run observer to `manager` (idempotent)."""
    manager.observe(RunObserver(id(manager.store)))
