"""Fan stored events out to consoles, callbacks, OTLP collectors and Ariadne.

Exporters run on the `EventBus` worker thread so a slow or dead backend never
stalls the agent loop. Events arrive already redacted by the store. The modules
behind these names are private; the OTLP exporter loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._ariadne import AriadneExporter
from ._bus import EventBus, Exporter
from ._callback import CallbackExporter
from ._console import ConsoleExporter

if TYPE_CHECKING:
    from ._otlp import OtlpExporter

__all__ = [
    "AriadneExporter",
    "CallbackExporter",
    "ConsoleExporter",
    "EventBus",
    "Exporter",
    "OtlpExporter",
]


def __getattr__(name: str) -> Any:
    # OpenTelemetry's SDK is slow to import: loaded when first asked for.
    if name == "OtlpExporter":
        from ._otlp import OtlpExporter

        globals()[name] = OtlpExporter
        return OtlpExporter
    raise AttributeError(f"module 'sessionstore.exporters' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
