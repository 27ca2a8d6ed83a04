"""One readable line per event, for local runs and the minimal example."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rich.console import Console
from rich.text import Text

from sessionstore._events import Event

_SEVERITY_STYLE: Final = {
    "debug": "dim",
    "info": "cyan",
    "warning": "yellow",
    "error": "bold red",
    "critical": "bold white on red",
}
# The fields that answer "what did compaction decide", in display order.
_KEY_FIELDS: Final = (
    "t_est",
    "max",
    "triggered",
    "reason",
    "pruned_count",
    "summary_tokens",
    "compression_ratio",
    "error_type",
    "fallback",
)


class ConsoleExporter:
    """Print events with rich; values are plain `Text`, so brackets in them are never markup."""

    name = "console"

    def __init__(self, console: Console | None = None) -> None:
        self._console = console or Console(stderr=True)

    def export(self, events: Sequence[Event]) -> None:
        for event in events:
            self._console.print(self.render(event), soft_wrap=True)

    @staticmethod
    def render(event: Event) -> Text:
        """The line printed for `event`."""
        line = Text()
        line.append(event.ts.strftime("%H:%M:%S.%f")[:-3], style="dim")
        line.append(" ")
        line.append(f"{event.severity.upper():<7}", style=_SEVERITY_STYLE.get(event.severity, ""))
        line.append(" ")
        line.append(event.event, style="bold")
        if event.session_id is not None:
            line.append(f" session={event.session_id}", style="magenta")
        for key in _KEY_FIELDS:
            if key in event.fields:
                line.append(f" {key}={event.fields[key]}")
        return line
