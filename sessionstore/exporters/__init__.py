"""Fan stored events out to consoles, callbacks, OTLP collectors and Ariadne.

Exporters run on the `EventBus` worker thread so a slow or dead backend never
stalls the agent loop. Events arrive already redacted by the store.
"""

from sessionstore.exporters.bus import EventBus, Exporter
from sessionstore.exporters.callback import CallbackExporter
from sessionstore.exporters.console import ConsoleExporter

__all__ = ["CallbackExporter", "ConsoleExporter", "EventBus", "Exporter"]
