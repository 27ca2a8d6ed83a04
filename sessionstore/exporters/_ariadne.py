"""Export events to the Ariadne trace viewer (`POST {url}/ingest`).

Payloads follow Ariadne's ingest schema (`packages/shared/src/schemas.ts`):
`{"batch": [trace | span, ...]}`, times as ISO-8601 UTC with a `Z` suffix (zod's
`datetime()` rejects offsets), `parent_id` omitted rather than null, trace
`metadata` values strings. One trace per compaction with a root `compact` span
and one child span per event, so events show as distinct spans in the tree.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import urlsplit

from sessionstore._events import Event
from sessionstore.exporters._groups import by_compaction

MAX_TIMEOUT: Final = 2.0  # a dead collector costs at most this (docs/OBSERVABILITY.md)


class AriadneExporter:
    """POST batches to Ariadne; failures are logged with `[Ariadne]` and counted, never raised."""

    name = "ariadne"

    def __init__(self, url: str, *, timeout: float = MAX_TIMEOUT) -> None:
        if urlsplit(url).scheme not in ("http", "https"):
            raise ValueError("Ariadne url must be an http(s) URL")
        if not 0 < timeout <= MAX_TIMEOUT:
            raise ValueError(f"timeout must be in (0, {MAX_TIMEOUT}] seconds")
        self.endpoint = url.rstrip("/") + "/ingest"
        self.timeout = timeout
        self.failures = 0

    def export(self, events: Sequence[Event]) -> None:
        if not events:
            return
        body = json.dumps({"batch": payload(events)}, default=str).encode()
        request = urllib.request.Request(
            self.endpoint, data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                response.read()
        except urllib.error.HTTPError as exc:  # before URLError: it is a subclass
            self._log(len(events), f"HTTP {exc.code}")
        except (OSError, ValueError) as exc:  # URLError, timeouts, resets, bad responses
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            self._log(len(events), f"{type(exc).__name__}: {reason}")

    def _log(self, count: int, message: str) -> None:
        self.failures += 1
        print(f"[Ariadne] export of {count} event(s) failed: {message}", file=sys.stderr)


def payload(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Ariadne trace and span objects for `events`."""
    items: list[dict[str, Any]] = []
    for group in by_compaction(events):
        trace_id = f"trace_{uuid.uuid4().hex}"
        root_id = f"span_{uuid.uuid4().hex[:24]}"
        started, ended = _iso(group[0].ts), _iso(max(event.ts for event in group))
        failed = any(event.event == "compact.error" for event in group)
        session_id = group[0].session_id
        trace: dict[str, Any] = {
            "type": "trace",
            "trace_id": trace_id,
            "name": "compact",
            "started_at": started,
            "ended_at": ended,
            "metadata": _metadata(group),
        }
        if session_id is not None:
            trace["group_id"] = session_id
        items.append(trace)
        items.append(
            {
                "type": "span",
                "trace_id": trace_id,
                "span_id": root_id,
                "kind": "custom",
                "name": "compact",
                "started_at": started,
                "ended_at": ended,
                "data": {"session_id": session_id, "events": [event.event for event in group]},
                "status": "error" if failed else "ok",
            }
        )
        items.extend(
            {
                "type": "span",
                "trace_id": trace_id,
                "span_id": f"span_{uuid.uuid4().hex[:24]}",
                "parent_id": root_id,
                "kind": "custom",
                "name": event.event,
                "started_at": _iso(event.ts),
                "ended_at": _iso(event.ts),
                "data": event.as_dict(),
                "status": "error" if event.event == "compact.error" else "ok",
            }
            for event in group
        )
    return items


def _metadata(group: Sequence[Event]) -> dict[str, str]:
    metadata = {"source": "sessionstore"}
    if group[0].session_id is not None:
        metadata["session_id"] = group[0].session_id
    models = [event.fields.get("model") for event in group]
    named = [model for model in models if isinstance(model, str)]
    if named:
        metadata["model"] = named[-1]
    return metadata


def _iso(ts: datetime) -> str:
    return ts.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
