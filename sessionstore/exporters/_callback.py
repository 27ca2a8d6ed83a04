"""Hand each event's JSON form to a user function (tests, custom sinks, metrics)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sessionstore._events import Event


class CallbackExporter:
    """Call `fn(event.as_dict())` once per event, on the bus worker thread."""

    name = "callback"

    def __init__(self, fn: Callable[[dict[str, Any]], None]) -> None:
        self._fn = fn

    def export(self, events: Sequence[Event]) -> None:
        for event in events:
            self._fn(event.as_dict())
