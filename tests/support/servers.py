"""Real HTTP servers on 127.0.0.1 for tests: an OTLP receiver and a validating Ariadne ingest."""

from __future__ import annotations

import gzip
import json
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

# zod's z.string().datetime() as used by Ariadne: UTC with a Z suffix, no offsets.
_ISO_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
_TRACE_KEYS = {"type", "trace_id", "name", "group_id", "started_at", "ended_at", "metadata"}
_SPAN_KEYS = {
    "type",
    "trace_id",
    "span_id",
    "parent_id",
    "kind",
    "name",
    "started_at",
    "ended_at",
    "data",
    "status",
}


class Recorder(ThreadingHTTPServer):
    """A server that keeps what it accepted and what it rejected."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.accepted: list[Any] = []
        self.rejected: list[list[str]] = []
        self.release = threading.Event()  # lets a sleeping handler go at teardown

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (the exporter's timeout) is expected here, not an error."""

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


class _Quiet(BaseHTTPRequestHandler):
    server: Recorder

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output clean."""

    def _body(self) -> bytes:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        return gzip.decompress(body) if self.headers.get("Content-Encoding") == "gzip" else body

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class OtlpReceiver(_Quiet):
    """POST /v1/traces decoded as ExportTraceServiceRequest."""

    def do_POST(self) -> None:
        if self.path != "/v1/traces":
            self._reply(404, b"", "text/plain")
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(self._body())
        self.server.accepted.append(request)
        body = ExportTraceServiceResponse().SerializeToString()
        self._reply(200, body, "application/x-protobuf")


class AriadneIngest(_Quiet):
    """POST /ingest validated like Ariadne's zod schema; 400 with the problems otherwise."""

    def do_POST(self) -> None:
        try:
            body = json.loads(self._body())
        except ValueError:
            problems = ["body is not JSON"]
        else:
            problems = validate_ingest(body)
        if self.path != "/ingest":
            problems.append(f"unexpected path {self.path}")
        if problems:
            self.server.rejected.append(problems)
            self._reply(400, json.dumps({"error": problems}).encode(), "application/json")
            return
        self.server.accepted.append(body)
        self._reply(200, b'{"success": true}', "application/json")


class Sleeper(_Quiet):
    """Answers only after 5 s (or at teardown): a hung backend."""

    def do_POST(self) -> None:
        self.server.release.wait(5)
        self._reply(200, b"{}", "application/json")


def _time(item: dict[str, Any], key: str, problems: list[str]) -> datetime | None:
    value = item.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not _ISO_Z.match(value):
        problems.append(f"{key}={value!r} is not ISO-8601 UTC with Z")
        return None
    return datetime.fromisoformat(value)


def _check_item(item: Any, problems: list[str]) -> None:
    if not isinstance(item, dict) or item.get("type") not in ("trace", "span"):
        problems.append(f"not a trace or span: {item!r}")
        return
    allowed = _TRACE_KEYS if item["type"] == "trace" else _SPAN_KEYS
    problems.extend(f"unknown key {key!r}" for key in item.keys() - allowed)
    required = ("trace_id",) if item["type"] == "trace" else ("trace_id", "span_id")
    for key in required:
        if not isinstance(item.get(key), str) or not item[key]:
            problems.append(f"{key} must be a non-empty string")
    for key in ("name", "group_id", "parent_id", "kind"):
        if key in item and not isinstance(item[key], str):
            problems.append(f"{key} must be a string when present")
    started, ended = _time(item, "started_at", problems), _time(item, "ended_at", problems)
    if started and ended and ended < started:
        problems.append("ended_at before started_at")
    metadata = item.get("metadata", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        problems.append("metadata must map strings to strings")
    if not isinstance(item.get("data", {}), dict):
        problems.append("data must be an object")
    if item.get("status", "ok") not in ("ok", "error"):
        problems.append("status must be ok or error")


def validate_ingest(body: Any) -> list[str]:
    """Problems with an Ariadne ingest body (batch form), including dangling links."""
    if not isinstance(body, dict) or not isinstance(body.get("batch"), list) or not body["batch"]:
        return ['body must be {"batch": [...]} with at least one item']
    problems: list[str] = []
    for item in body["batch"]:
        _check_item(item, problems)
    if problems:
        return problems
    traces = {item["trace_id"] for item in body["batch"] if item["type"] == "trace"}
    spans = {item["span_id"]: item for item in body["batch"] if item["type"] == "span"}
    for span in spans.values():
        if span["trace_id"] not in traces:
            problems.append(f"span {span['span_id']} has no trace in the batch")
        parent = spans.get(span.get("parent_id", ""))
        if "parent_id" in span and (parent is None or parent["trace_id"] != span["trace_id"]):
            problems.append(f"span {span['span_id']} has a dangling parent_id")
    return problems


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[Recorder]:
    """Run `handler` on a free 127.0.0.1 port for the duration of the block."""
    server = Recorder(handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join()


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on right now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def dead_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens."""
    return f"http://127.0.0.1:{free_port()}"
