"""What a compaction manager tells the loop around it, without knowing which loop it is.

Adapters keep their own copy of a conversation (the Agents SDK builds each model input
from its run's copy); when the manager rewrites what is stored, by compacting or by
truncating a tool output as it is stored, that copy is stale. Observers hear of it in
the caller's task, synchronously, so a run's context variables and tracing apply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .._store._context_replacement import CompactionResult


class CompactionObserver(Protocol):
    """Told of rewrites of a session's stored context; must not block or raise."""

    def context_rewritten(self, session_id: str) -> None:
        """The stored context no longer matches what a caller may hold: reload it."""
        ...

    def compacted(self, session_id: str, result: CompactionResult, strategy: str) -> None:
        """A compaction committed (after `context_rewritten`)."""
        ...
