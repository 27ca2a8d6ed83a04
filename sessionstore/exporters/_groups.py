"""Split a bus batch into per-compaction groups, shared by the tracing exporters."""

from __future__ import annotations

from collections.abc import Sequence

from sessionstore._events import Event

GroupKey = tuple[str | None, object]


def by_compaction(events: Sequence[Event]) -> list[list[Event]]:
    """Events grouped by (session, compaction_id), in order of first appearance.

    A compaction records all its events in one call, so grouping a batch this way
    gives one trace/span per compaction without needing a shared id on every event.
    """
    groups: dict[GroupKey, list[Event]] = {}
    for event in events:
        key = (event.session_id, event.fields.get("compaction_id"))
        groups.setdefault(key, []).append(event)
    return list(groups.values())
