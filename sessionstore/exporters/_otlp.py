"""Export events as OTLP spans (one `compact` span per compaction, events as span events).

Each event becomes a SpanEvent (docs/OBSERVABILITY.md, "OTLP"); span-level attributes use the GenAI
semantic conventions only where the meaning matches, `sessionstore.*` otherwise.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import Status, StatusCode
from opentelemetry.util.types import AttributeValue

from sessionstore._events import Event
from sessionstore.exporters._groups import by_compaction

_SCOPE: Final = "sessionstore.exporters.otlp"  # stable: collectors filter on it
# Event field -> span attribute for the numbers a dashboard filters on.
_SPAN_FIELDS: Final = {
    "compaction_id": "sessionstore.compaction_id",
    "t_est": "sessionstore.t_est",
    "max": "sessionstore.max_tokens",
    "triggered": "sessionstore.triggered",
    "pruned_count": "sessionstore.pruned_count",
    "summary_tokens": "sessionstore.summary_tokens",
    "compression_ratio": "sessionstore.compression_ratio",
    "error_type": "sessionstore.error_type",
    "fallback": "sessionstore.fallback",
}
_PRIMITIVES: Final = (str, bool, int, float)


class _Collect(SpanProcessor):
    """Keep ended spans so `export()` can send them in one synchronous request."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


class OtlpExporter:
    """Send events to an OTLP/HTTP (protobuf) endpoint such as `http://host:4318/v1/traces`."""

    name = "otlp"

    def __init__(
        self, endpoint: str, *, service_name: str = "sessionstore", timeout: float = 2.0
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self._collect = _Collect()
        # A private provider: never touch (or depend on) the application's global tracer.
        self._provider = TracerProvider(
            resource=Resource.create({"service.name": service_name}), shutdown_on_exit=False
        )
        self._provider.add_span_processor(self._collect)
        self._tracer = self._provider.get_tracer(_SCOPE)
        self._otlp = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
        self._lock = threading.Lock()

    def export(self, events: Sequence[Event]) -> None:
        """Build and send the spans now; raises if the collector did not accept them."""
        with self._lock:
            for group in by_compaction(events):
                self._record(group)
            spans, self._collect.spans = self._collect.spans, []
            if spans and self._otlp.export(spans) is not SpanExportResult.SUCCESS:
                raise ConnectionError(f"OTLP export of {len(spans)} span(s) failed")

    def close(self) -> None:
        """Release the HTTP session."""
        self._provider.shutdown()
        self._otlp.shutdown()  # type: ignore[no-untyped-call]  # unannotated upstream

    def _record(self, group: Sequence[Event]) -> None:
        first = group[0]
        span = self._tracer.start_span(
            "compact", attributes=_span_attributes(group), start_time=_ns(first.ts)
        )
        for event in group:
            attributes = dict(flatten(event.fields))
            attributes["severity"] = event.severity
            span.add_event(event.event, attributes=attributes, timestamp=_ns(event.ts))
        errors = [event for event in group if event.event == "compact.error"]
        if errors:
            span.set_status(Status(StatusCode.ERROR, str(errors[-1].fields.get("error_type", ""))))
        span.end(end_time=max(_ns(event.ts) for event in group))


def _span_attributes(group: Sequence[Event]) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {"gen_ai.operation.name": "compact"}
    session_id = group[0].session_id
    if session_id is not None:
        attributes["gen_ai.conversation.id"] = session_id
    for event in group:  # later events win: the summary/prune outcome over the decision
        model = event.fields.get("model")
        if isinstance(model, str):
            attributes["gen_ai.request.model"] = model
        for field, name in _SPAN_FIELDS.items():
            value = event.fields.get(field)
            if isinstance(value, _PRIMITIVES):
                attributes[name] = value
    return attributes


def flatten(fields: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, AttributeValue]]:
    """OTLP attributes for `fields`: dotted keys for dicts, arrays or JSON for lists; no None."""
    for key, value in fields.items():
        name = f"{prefix}{key}"
        if value is None:
            continue
        if isinstance(value, Mapping):
            yield from flatten(value, f"{name}.")
        elif isinstance(value, _PRIMITIVES):
            yield name, value
        elif isinstance(value, list | tuple):
            kinds = {type(item) for item in value}
            if len(kinds) == 1 and kinds <= set(_PRIMITIVES):
                yield name, tuple(value)
            else:
                yield name, json.dumps(value, default=str)
        else:
            yield name, str(value)


def _ns(ts: datetime) -> int:
    return int(ts.timestamp() * 1_000_000_000)
