"""Event model: every decision the store makes becomes a row in `events`.

The events table is the source of truth (queryable with SQL); exporters fan
events out elsewhere. Typed columns mirror the spec's event fields so common
questions need no JSON parsing; the full event is kept in `payload`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, Final

# Event fields that also get their own column; "max" is the spec's name for max_tokens.
# The event a compaction records for its archive; archive sinks record it for their copies.
ARCHIVAL_EVENT: Final = "compact.archival"
_TYPED_COLUMNS: Final = {
    "compaction_id": "compaction_id",
    "model": "model",
    "t_est": "t_est",
    "max": "max_tokens",
    "triggered": "triggered",
    "pruned_count": "pruned_count",
    "summary_tokens": "summary_tokens",
    "compression_ratio": "compression_ratio",
    "error_type": "error_type",
    "fallback": "fallback",
}


@dataclass(frozen=True, slots=True)
class Event:
    """One structured event, e.g. `compact.trigger_decision`."""

    event: str
    session_id: str | None = None
    severity: str = "info"
    fields: Mapping[str, Any] = field(default_factory=dict)
    ts: datetime = field(default_factory=lambda: datetime.now(UTC))

    def as_dict(self) -> dict[str, Any]:
        """The JSON form used by the events table payload and by exporters."""
        return {
            "ts": self.ts.isoformat(),
            "session_id": self.session_id,
            "event": self.event,
            "severity": self.severity,
            **self.fields,
        }

    def row(self) -> dict[str, Any]:
        """Column values for an insert into the `events` table."""
        values: dict[str, Any] = {
            "ts": self.ts,
            "session_id": self.session_id,
            "event": self.event,
            "severity": self.severity,
            "payload": self.as_dict(),
        }
        for name, column in _TYPED_COLUMNS.items():
            values[column] = self.fields.get(name)  # every key present: rows batch together
        return values


def session_event(name: str, record: Any) -> Event:
    """An event about one session whose fields are a dataclass record's (a rewind, a fork):
    its `session_id` names the session, every other field goes into the event."""
    values = {item.name: getattr(record, item.name) for item in fields(record)}
    session_id = values.pop("session_id")
    return Event(name, session_id=session_id, fields=values)
