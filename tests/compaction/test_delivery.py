"""After a compaction commits: exporters, archive sinks and the SDK's own tracing see it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from agents.tracing import TracingProcessor, set_trace_processors, set_tracing_disabled, trace

from sessionstore import SessionStore
from sessionstore._events import Event
from sessionstore._schema import events
from sessionstore.adapters.agents_sdk import watch_runs
from sessionstore.archive import ArchiveDelivery
from sessionstore.archive._filesystem import FilesystemSink
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from sessionstore.exporters._bus import EventBus
from sessionstore.exporters._callback import CallbackExporter
from tests.support.histories import coding_session

SECRET = "password: hunter2-Sup3r"


def history() -> list[dict[str, Any]]:
    items = coding_session(8)
    items[3] = {**items[3], "output": f"config dump {SECRET}"}
    return items


async def test_filesystem_sink_gets_a_redacted_copy(sqlite_url: str, tmp_path: Path) -> None:
    sink = FilesystemSink(tmp_path / "archive")
    async with SessionStore(sqlite_url) as store:
        manager = CompactionManager(
            CompactionConfig(
                store=store, policy=CompactionPolicy(keep_recent_turns=2), sinks=[sink]
            )
        )
        await manager.append("s", history())
        outcome = await manager.compact("s")
        assert outcome.result is not None
        async with store.engine.connect() as conn:
            archival = [
                p if isinstance(p, dict) else json.loads(p)
                for (p,) in await conn.execute(
                    sa.select(events.c.payload).where(events.c.event == "compact.archival")
                )
            ]
    folder = tmp_path / "archive" / "s"
    transcript = folder / "transcript-pre-compact-001.jsonl"
    assert transcript.exists() and (folder / "summary-001.json").exists()
    assert (folder / "events.jsonl").exists()
    assert "hunter2-Sup3r" not in transcript.read_text() and "<REDACTED>" in transcript.read_text()
    assert any(event.get("file_path") == str(transcript) for event in archival)
    lines = transcript.read_text().splitlines()
    assert outcome.plan is not None and len(lines) == len(outcome.plan.replaced_rows)


class BrokenSink:
    name = "broken"

    def deliver(self, delivery: ArchiveDelivery) -> list[Event]:
        raise OSError("disk full")


async def test_a_failing_sink_is_recorded_not_fatal(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url) as store:
        manager = CompactionManager(CompactionConfig(store=store, sinks=[BrokenSink()]))
        await manager.append("s", coding_session(10))
        outcome = await manager.compact("s")
        assert outcome.compacted
        async with store.engine.connect() as conn:
            error = (
                await conn.execute(
                    sa.select(events.c.payload).where(events.c.event == "compact.error")
                )
            ).scalar_one()
    error = error if isinstance(error, dict) else json.loads(error)
    assert error["fallback"] == "skipped sink broken" and "disk full" in error["message"]


async def test_exporters_receive_every_compaction_event(sqlite_url: str) -> None:
    received: list[dict[str, Any]] = []
    with EventBus([CallbackExporter(received.append)]) as bus:
        async with SessionStore(sqlite_url, publisher=bus) as store:
            manager = CompactionManager(CompactionConfig(store=store))
            await manager.append("s", history())
            await manager.compact("s")
        assert bus.flush(5.0)
    names = [event["event"] for event in received]
    for name in ("compact.trigger_decision", "compact.summary_created", "compact.archival"):
        assert name in names
    assert all("hunter2-Sup3r" not in json.dumps(event) for event in received)
    # Exporters see the same links as the stored rows, so spans group by compaction.
    summary = next(event for event in received if event["event"] == "compact.summary_created")
    assert isinstance(summary["compaction_id"], int) and isinstance(summary["archive_id"], int)


class Spans(TracingProcessor):
    def __init__(self) -> None:
        self.spans: list[Any] = []

    def on_trace_start(self, trace: Any) -> None: ...
    def on_trace_end(self, trace: Any) -> None: ...
    def on_span_start(self, span: Any) -> None: ...

    def on_span_end(self, span: Any) -> None:
        self.spans.append(span)

    def shutdown(self) -> None: ...
    def force_flush(self) -> None: ...


async def test_compaction_appears_in_the_sdk_trace(sqlite_url: str) -> None:
    processor = Spans()
    set_trace_processors([processor])
    set_tracing_disabled(False)
    try:
        async with SessionStore(sqlite_url) as store:
            manager = CompactionManager(CompactionConfig(store=store))
            watch_runs(manager)  # what SQLSession and input_filter subscribe for SDK runs
            await manager.append("s", coding_session(10))
            with trace("agent run"):
                await manager.compact("s")
            await manager.append("s", coding_session(10, seed=1))
            await manager.compact("s")  # no active trace: no span
    finally:
        set_tracing_disabled(True)
        set_trace_processors([])
    ours = [
        span
        for span in processor.spans
        if span.span_data.export().get("name") == "sessionstore.compaction"
    ]
    assert len(ours) == 1
    assert ours[0].span_data.export()["data"]["version"] == 1
