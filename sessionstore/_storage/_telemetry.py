"""Writes that are telemetry, not conversation: their commit need not wait for the disk.

A model call's usage (tokens, cost) is what a dashboard reads, not what a session replays.
Its transaction commits without waiting for the log flush (SQLite: synchronous=NORMAL for
that transaction in WAL mode; PostgreSQL: synchronous_commit off for it), as a call's record
does: a crash of the process loses nothing, a power loss at most the telemetry written since
the last append, whose own flush covers it. Conversation rows never take this path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

_MARK: Final = "commits_as_telemetry"
_F = TypeVar("_F", bound=Callable[..., Any])


# PostgreSQL: for this transaction only (a pooler in transaction mode keeps it to it too).
NO_FLUSH_WAIT: Final = "SET LOCAL synchronous_commit = off"


def telemetry(fn: _F) -> _F:
    """Mark a write transaction whose commit need not wait for the log flush."""
    setattr(fn, _MARK, True)
    return fn


def is_telemetry(fn: Callable[..., Any]) -> bool:
    return bool(getattr(fn, _MARK, False))
