"""Console and callback exporters: what a person or a function actually receives."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from sessionstore._events import Event
from sessionstore.exporters import CallbackExporter, ConsoleExporter
from tests.support.events import SESSION, compaction, trigger_decision


def test_console_prints_one_line_per_event_with_key_fields() -> None:
    out = io.StringIO()
    ConsoleExporter(Console(file=out, width=300, color_system=None)).export(compaction())
    lines = out.getvalue().splitlines()
    assert len(lines) == 6
    decision, summary, pruned, _, _, error = lines
    assert decision.startswith("06:00:00.000 INFO    compact.trigger_decision session=sess-42")
    assert "t_est=112345 max=128000 triggered=True reason=threshold pruned_count=47" in decision
    assert "summary_tokens=480 compression_ratio=0.0123" in summary
    assert "pruned_count=47" in pruned
    assert "ERROR" in error
    assert "error_type=timeout fallback=pruning-only" in error


def test_console_colours_severity_and_never_parses_markup() -> None:
    error = Event("compact.error", SESSION, severity="error", fields={"error_type": "[bold]x"})
    line = ConsoleExporter.render(error)
    assert "error_type=[bold]x" in line.plain
    assert any(span.style == "bold red" for span in line.spans)


def test_callback_receives_each_events_json_form() -> None:
    seen: list[dict[str, Any]] = []
    events = [trigger_decision(), *compaction()[1:3]]
    CallbackExporter(seen.append).export(events)
    assert seen == [event.as_dict() for event in events]
    assert seen[0]["ts"] == "2025-10-19T06:00:00+00:00"
    assert seen[0]["t_est"] == 112345
