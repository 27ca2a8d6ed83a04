"""AriadneExporter against a real server that validates Ariadne's ingest schema."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from sessionstore._events import Event
from sessionstore.exporters import CallbackExporter, EventBus
from sessionstore.exporters._ariadne import AriadneExporter, payload
from tests.support.events import MODEL, SESSION, compaction, trigger_decision
from tests.support.servers import AriadneIngest, Recorder, Sleeper, dead_url, serve


@pytest.fixture
def ingest() -> Iterator[Recorder]:
    with serve(AriadneIngest) as server:
        yield server


def test_a_whole_compaction_arrives_valid(ingest: Recorder) -> None:
    exporter = AriadneExporter(ingest.url)
    with EventBus([exporter]) as bus:
        bus.publish(compaction())
        assert bus.flush(10)
    assert ingest.rejected == []
    assert exporter.failures == 0

    [body] = ingest.accepted
    [trace] = [item for item in body["batch"] if item["type"] == "trace"]
    assert trace["group_id"] == SESSION
    assert trace["metadata"] == {"source": "sessionstore", "session_id": SESSION, "model": MODEL}
    spans = {item["name"]: item for item in body["batch"] if item["type"] == "span"}
    root = spans.pop("compact")
    assert "parent_id" not in root and root["status"] == "error"
    assert list(spans) == [event.event for event in compaction()]
    assert all(span["parent_id"] == root["span_id"] for span in spans.values())
    assert spans["compact.error"]["status"] == "error"
    assert spans["compact.archival"]["status"] == "ok"
    summary = spans["compact.summary_created"]
    assert summary["started_at"] == "2025-10-19T06:00:00.015Z"
    assert summary["data"]["summary"].startswith("Goal: ship the exporter.")
    assert spans["compact.trigger_decision"]["data"]["policy"]["trigger_pct"] == 0.85


def test_one_trace_per_session_in_a_mixed_batch(ingest: Recorder) -> None:
    exporter = AriadneExporter(ingest.url)
    exporter.export([trigger_decision("a"), trigger_decision("b"), trigger_decision("a")])
    [body] = ingest.accepted
    traces = [item for item in body["batch"] if item["type"] == "trace"]
    assert [trace["group_id"] for trace in traces] == ["a", "b"]
    assert len(body["batch"]) == 2 + 2 + 3  # traces, root spans, event spans


def test_the_validator_has_teeth(ingest: Recorder) -> None:
    """A body the real Ariadne would reject (offset timestamp) gets a 400 here too."""
    bad = payload([trigger_decision()])
    bad[0]["started_at"] = "2025-10-19T06:00:00+00:00"
    request = urllib.request.Request(
        f"{ingest.url}/ingest", data=json.dumps({"batch": bad}).encode(), method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=2)
    assert raised.value.code == 400
    assert ingest.accepted == []
    assert "not ISO-8601 UTC with Z" in ingest.rejected[0][0]


def test_nothing_to_send_sends_nothing(ingest: Recorder) -> None:
    AriadneExporter(ingest.url).export([])
    assert ingest.accepted == ingest.rejected == []


def test_rejection_is_logged_not_raised(
    ingest: Recorder, capfd: pytest.CaptureFixture[str]
) -> None:
    exporter = AriadneExporter(ingest.url)
    exporter.endpoint = f"{ingest.url}/wrong"  # the server answers 400
    exporter.export([trigger_decision()])
    assert exporter.failures == 1
    assert "[Ariadne] export of 1 event(s) failed: HTTP 400" in capfd.readouterr().err


@pytest.mark.parametrize("backend", ["dead", "sleeping"])
def test_dead_or_hung_backend_never_blocks_or_raises(
    backend: str, capfd: pytest.CaptureFixture[str]
) -> None:
    with serve(Sleeper) as sleeper:
        url = dead_url() if backend == "dead" else sleeper.url
        ariadne = AriadneExporter(url)
        seen: list[dict[str, Any]] = []
        with EventBus([ariadne, CallbackExporter(seen.append)]) as bus:
            started = time.perf_counter()
            bus.publish(compaction())
            assert time.perf_counter() - started < 0.05  # the hand-off only

            assert bus.flush(15)
            bus.publish([Event("compact.token_estimate", SESSION)])
            assert bus.flush(15)
            assert bus.failures == 0  # swallowed and logged by the exporter itself
        assert ariadne.failures == 2
        assert [item["event"] for item in seen][-1] == "compact.token_estimate"
        assert len(seen) == 7
    err = capfd.readouterr().err
    assert err.count("[Ariadne] export of") == 2
    assert ("timed out" if backend == "sleeping" else "Connection refused") in err


@pytest.mark.parametrize(("url", "timeout"), [("http://x", 2.5), ("http://x", 0), ("ftp://x", 1.0)])
def test_constructor_validates_url_and_caps_timeout(url: str, timeout: float) -> None:
    with pytest.raises(ValueError):
        AriadneExporter(url, timeout=timeout)
