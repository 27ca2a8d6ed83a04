"""A bounded, non-blocking hand-off from the store to exporters.

`publish()` only enqueues: the agent loop must never wait on (or crash because
of) an observability backend. One daemon thread drains the queue, so this works
under any event loop or none.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from types import TracebackType
from typing import Final, Protocol, Self

from sessionstore._events import Event

_MAX_BATCH: Final = 256
_LATENCY_WINDOW: Final = 10_000


class Exporter(Protocol):
    """A sink for events; `export` may block, it runs on the bus worker."""

    name: str

    def export(self, events: Sequence[Event]) -> None: ...


class EventBus:
    """Queue events for exporters on a background thread; drop rather than block when full."""

    def __init__(self, exporters: Sequence[Exporter], *, maxsize: int = 1000) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.exporters: tuple[Exporter, ...] = tuple(exporters)
        self.dropped = 0
        self.failures = 0
        # Milliseconds from publish() until every exporter returned, for the bench and tests.
        self.delivery_latencies_ms: deque[float] = deque(maxlen=_LATENCY_WINDOW)
        self._queue: queue.Queue[tuple[float, Event] | None] = queue.Queue(maxsize)
        self._pending = 0
        self._idle = threading.Condition()
        self._closed = False
        self._worker = threading.Thread(target=self._run, name="sessionstore-events", daemon=True)
        self._worker.start()

    def publish(self, events: Sequence[Event]) -> None:
        """Enqueue `events` without waiting; whatever does not fit is dropped and counted."""
        now = time.perf_counter()
        for event in events:
            with self._idle:
                if self._closed:
                    self.dropped += 1
                    continue
                try:
                    self._queue.put_nowait((now, event))
                except queue.Full:
                    self.dropped += 1
                else:
                    self._pending += 1

    def flush(self, timeout: float) -> bool:
        """Wait until every queued event was handed to the exporters; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def close(self, timeout: float = 5.0) -> bool:
        """Flush, then stop the worker; later publishes are dropped. False if flush timed out."""
        with self._idle:
            if self._closed:
                return self._pending == 0
            self._closed = True
        drained = self.flush(timeout)
        if drained:
            self._queue.put(None)  # empty after a flush, so this cannot block
            self._worker.join(timeout)
        return drained

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self) -> None:
        stopping = False
        while not stopping:
            batch: list[tuple[float, Event]] = []
            item = self._queue.get()
            while item is not None:  # None is close()'s stop signal
                batch.append(item)
                if len(batch) >= _MAX_BATCH:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            else:
                stopping = True
            if batch:
                self._deliver(batch)

    def _deliver(self, batch: list[tuple[float, Event]]) -> None:
        events = [event for _, event in batch]
        for exporter in self.exporters:
            try:
                exporter.export(events)
            except Exception as exc:  # one broken backend must not starve the others
                self.failures += 1
                message = f"exporter {exporter.name!r} failed: {type(exc).__name__}: {exc}"
                print(f"[sessionstore] {message}", file=sys.stderr)
        done = time.perf_counter()
        self.delivery_latencies_ms.extend((done - sent) * 1000.0 for sent, _ in batch)
        with self._idle:
            self._pending -= len(batch)
            self._idle.notify_all()
