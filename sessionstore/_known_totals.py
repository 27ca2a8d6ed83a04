"""Each session's stored token total as this store last saw it, kept without a read.

A model call's record reads the total in its own transaction; this store's own appends add
to it. The pre-flight decides from it without waiting for the server (the call can go out
while its record is written, which decides again from the stored total), so a total another
process moved meanwhile only delays a compaction by one call.
"""

from __future__ import annotations

from typing import Final

_KNOWN_SESSIONS: Final = 10_000  # remembered per store (then all forgotten at once)


class KnownTotals:
    """The totals of the sessions a store recorded calls of."""

    def __init__(self) -> None:
        self._totals: dict[str, int] = {}

    def get(self, session_id: str) -> int | None:
        """The last total seen (None: not recorded against since the store opened)."""
        return self._totals.get(session_id)

    def saw(self, session_id: str, total: int) -> None:
        """A record read `total` (bounded: past the limit every session is forgotten)."""
        if len(self._totals) >= _KNOWN_SESSIONS and session_id not in self._totals:
            self._totals.clear()
        self._totals[session_id] = total

    def appended(self, session_id: str, tokens: int) -> None:
        """This store appended `tokens` to a session it knows the total of."""
        if session_id in self._totals:
            self._totals[session_id] += tokens
