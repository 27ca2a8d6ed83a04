"""EventBus: publish never blocks or raises; a broken exporter never stops the others."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from sessionstore._events import Event
from sessionstore.exporters import CallbackExporter, EventBus


def _event(n: int) -> Event:
    return Event("compact.token_estimate", "s1", fields={"n": n})


class Blocking:
    """Holds the worker inside export() until released."""

    name = "blocking"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.seen: list[Event] = []

    def export(self, events: Sequence[Event]) -> None:
        self.entered.set()
        assert self.release.wait(10)
        self.seen.extend(events)


class Boom:
    name = "boom"

    def export(self, events: Sequence[Event]) -> None:
        raise RuntimeError("backend down")


def test_full_queue_drops_and_counts_instead_of_blocking() -> None:
    blocking = Blocking()
    bus = EventBus([blocking], maxsize=2)
    bus.publish([_event(0)])
    assert blocking.entered.wait(5)  # the worker holds event 0; the queue is empty again

    started = time.perf_counter()
    bus.publish([_event(n) for n in range(1, 6)])
    assert time.perf_counter() - started < 0.05
    assert bus.dropped == 3
    assert not bus.flush(0.05)  # still stuck in the exporter

    blocking.release.set()
    assert bus.close(5)
    assert [event.fields["n"] for event in blocking.seen] == [0, 1, 2]
    assert bus.dropped == 3


def test_raising_exporter_is_counted_logged_and_isolated(capfd: pytest.CaptureFixture[str]) -> None:
    seen: list[dict[str, Any]] = []
    with EventBus([Boom(), CallbackExporter(seen.append)]) as bus:
        bus.publish([Event("compact.error", "s1", fields={"message": "token=hunter2"})])
        assert bus.flush(5)
        bus.publish([_event(1)])
        assert bus.flush(5)
        assert bus.failures == 2
    assert [item["event"] for item in seen] == ["compact.error", "compact.token_estimate"]
    err = capfd.readouterr().err
    assert "[sessionstore] exporter 'boom' failed: RuntimeError: backend down" in err
    assert "hunter2" not in err  # the exception message only, never the events


def test_close_flushes_then_drops_later_publishes() -> None:
    seen: list[dict[str, Any]] = []
    bus = EventBus([CallbackExporter(seen.append)])
    bus.publish([_event(n) for n in range(50)])
    assert bus.close(5)
    assert [item["n"] for item in seen] == list(range(50))
    assert len(bus.delivery_latencies_ms) == 50
    assert all(latency >= 0 for latency in bus.delivery_latencies_ms)

    bus.publish([_event(99)])
    assert bus.dropped == 1
    assert bus.close(1)  # idempotent
    assert len(seen) == 50


def test_maxsize_must_be_positive() -> None:
    with pytest.raises(ValueError, match="maxsize"):
        EventBus([], maxsize=0)


class Sizes:
    name = "sizes"

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def export(self, events: Sequence[Event]) -> None:
        self.sizes.append(len(events))


def test_backlog_is_delivered_in_bounded_batches() -> None:
    blocking, sizes = Blocking(), Sizes()
    bus = EventBus([blocking, sizes], maxsize=1000)
    bus.publish([_event(0)])
    assert blocking.entered.wait(5)
    bus.publish([_event(n) for n in range(1, 601)])
    blocking.release.set()
    assert bus.close(5)
    assert len(blocking.seen) == 601
    assert sizes.sizes == [1, 256, 256, 88]
