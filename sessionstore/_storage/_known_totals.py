"""Each session's stored token total as this store last saw it, kept without a read.

A model call's record reads the total in its own transaction; this store's own appends add
to it. The pre-flight decides from it without waiting for the server (the call can go out
while its record is written, which decides again from the stored total), so a total another
process moved meanwhile only delays a compaction by one call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

KNOWN_SESSIONS: Final = 10_000  # sessions a store remembers anything of (then forgets all)
_KEEPS: Final = "keeps_context_totals"
_F = TypeVar("_F", bound=Callable[..., Any])


def keeps_totals(fn: _F) -> _F:
    """Mark a write transaction after which a known total is still right: it never changes a
    session's token total (usage, events, metadata), or its caller moves the known total by
    what it appended once it commits (the general append). Any other write forgets what it
    may have moved."""
    setattr(fn, _KEEPS, True)
    return fn


class KnownTotals:
    """The totals of the sessions a store recorded calls of."""

    def __init__(self) -> None:
        self._totals: dict[str, int] = {}

    def get(self, session_id: str) -> int | None:
        """The last total seen (None: not recorded against since the store opened)."""
        return self._totals.get(session_id)

    def saw(self, session_id: str, total: int) -> None:
        """A record read `total` (bounded: past the limit every session is forgotten)."""
        if len(self._totals) >= KNOWN_SESSIONS and session_id not in self._totals:
            self._totals.clear()
        self._totals[session_id] = total

    def wrote(self, fn: Callable[..., Any], session_id: str | None) -> None:
        """A write `fn` of this store ran on `session_id` (None: on sessions it does not name):
        unless it keeps totals, what it may have moved is forgotten (a truncated append, a
        compaction, a rewind; the next record reads the total again)."""
        if getattr(fn, _KEEPS, False):
            return
        if session_id is None:
            self._totals.clear()
        else:
            self._totals.pop(session_id, None)

    def appended(self, session_id: str, tokens: int) -> None:
        """This store appended `tokens` to a session it knows the total of."""
        if session_id in self._totals:
            self._totals[session_id] += tokens
