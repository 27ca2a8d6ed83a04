"""A real OpenAI-compatible HTTP server for tests: no mocks, the real client talks HTTP to it.

It listens on 127.0.0.1 on an ephemeral port in a background thread and answers
POST /v1/chat/completions, POST /v1/responses and POST /v1/responses/compact with the JSON
shapes the OpenAI API uses. A compaction item it issues is bound to the request's model, as
the real API binds its encrypted content: `/v1/responses` with an item of another model (or
one it never issued) answers 400 `invalid_encrypted_content`, like the real service.
Each request takes the next queued behaviour (ok, an HTTP error, a delay, a refusal, a
truncated reply, a tool call, a context-length error); with the queue empty it replies with a
deterministic echo of the request. Every request body is recorded for assertions.

    with OpenAIServer() as server:
        server.enqueue(status(500), ok("summary"))
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = [
    "Behaviour",
    "OpenAIServer",
    "RecordedRequest",
    "content_filter",
    "context_length_error",
    "echo_text",
    "length",
    "no_compaction_item",
    "ok",
    "refusal",
    "sleep",
    "status",
    "tool_call",
]

BehaviourKind = Literal[
    "ok", "status", "sleep", "refusal", "length", "tool_call", "filtered", "no_item"
]


@dataclass(frozen=True)
class Behaviour:
    """How the server answers one request."""

    kind: BehaviourKind
    text: str | None = None  # reply text; None means the default echo
    status: int = 200
    error: Mapping[str, Any] | None = None  # the "error" object of an HTTP error reply
    seconds: float = 0.0
    then: Behaviour | None = None  # what a delayed request finally gets
    tool_name: str = ""
    arguments: str = "{}"


def ok(text: str | None = None) -> Behaviour:
    """A normal reply with `text` (default: the echo of the request)."""
    return Behaviour("ok", text)


def status(
    http_status: int, /, message: str = "The server had an error.", **error: Any
) -> Behaviour:
    """An HTTP error with an OpenAI error body; `error` adds fields such as code="..."."""
    kind = "server_error" if http_status >= 500 else "invalid_request_error"
    body = {"message": message, "type": kind, "param": None, "code": None, **error}
    return Behaviour("status", status=http_status, error=body)


def context_length_error() -> Behaviour:
    """The 400 OpenAI sends when the prompt does not fit the model's window."""
    return status(
        400,
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 131072 tokens. Please reduce the length of the messages.",
        type="invalid_request_error",
        param="messages",
        code="context_length_exceeded",
    )


def sleep(seconds: float, then: Behaviour | None = None) -> Behaviour:
    """Wait before answering (with `then`, default the echo): for client timeouts."""
    return Behaviour("sleep", seconds=seconds, then=then)


def refusal(text: str = "I'm sorry, I can't help with that.") -> Behaviour:
    """An explicit refusal (message.refusal / a refusal content part)."""
    return Behaviour("refusal", text)


def length(text: str = "A summary cut off in the mid") -> Behaviour:
    """A reply truncated at the token limit (finish_reason "length" / max_output_tokens)."""
    return Behaviour("length", text)


def content_filter(text: str = "") -> Behaviour:
    """A reply stopped by the content filter."""
    return Behaviour("filtered", text)


def no_compaction_item() -> Behaviour:
    """A `/responses/compact` reply holding the user messages but no compaction item."""
    return Behaviour("no_item")


def tool_call(name: str, args: Mapping[str, Any] | str = "{}") -> Behaviour:
    """A reply that calls a tool instead of answering."""
    arguments = args if isinstance(args, str) else json.dumps(args)
    return Behaviour("tool_call", tool_name=name, arguments=arguments)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]  # lower-case names


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    return ""


def echo_text(body: Mapping[str, Any]) -> str:
    """The default reply: deterministic, and different for different last user inputs."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        source = body.get("input")
        messages = source if isinstance(source, list) else [{"role": "user", "content": source}]
    user = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
    text = " ".join(_content_text(user[-1].get("content")).split()) if user else ""
    return f"echo: {text[:200]}"


@dataclass
class _State:
    queue: deque[Behaviour] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Condition = field(default_factory=threading.Condition)  # notified per request
    stopping: threading.Event = field(default_factory=threading.Event)
    counter: int = 0
    bound: dict[str, str] = field(default_factory=dict)  # compaction item id -> its model


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, state: _State, default: Callable[[Mapping[str, Any]], str]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state
        self.default = default

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that timed out and hung up is expected here, not an error."""


def _usage(body: Mapping[str, Any], text: str) -> tuple[int, int]:
    return max(1, len(json.dumps(body)) // 4), len(text.split())


def _chat_payload(number: int, behaviour: Behaviour, body: Mapping[str, Any], text: str) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    finish = {"ok": "stop", "length": "length", "filtered": "content_filter"}.get(behaviour.kind)
    if behaviour.kind == "refusal":
        message.update(content=None, refusal=text)
        finish = "stop"
    elif behaviour.kind == "tool_call":
        call = {"name": behaviour.tool_name, "arguments": behaviour.arguments}
        message.update(
            content=None,
            tool_calls=[{"id": f"call_{number}", "type": "function", "function": call}],
        )
        finish = "tool_calls"
    prompt, completion = _usage(body, text)
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "test-model"),
        "system_fingerprint": "fp_test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _responses_usage(body: Mapping[str, Any], text: str) -> dict[str, Any]:
    """The Responses API's usage object (input and output token counts, details)."""
    prompt, completion = _usage(body, text)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def _responses_payload(
    number: int, behaviour: Behaviour, body: Mapping[str, Any], text: str
) -> Any:
    part: dict[str, Any] = {"type": "output_text", "text": text, "annotations": []}
    incomplete = {"length": "max_output_tokens", "filtered": "content_filter"}.get(behaviour.kind)
    if behaviour.kind == "refusal":
        part = {"type": "refusal", "refusal": text}
    item: dict[str, Any] = {
        "type": "message",
        "id": f"msg_{number}",
        "status": "incomplete" if incomplete else "completed",
        "role": "assistant",
        "content": [part],
    }
    if behaviour.kind == "tool_call":
        item = {
            "type": "function_call",
            "id": f"fc_{number}",
            "call_id": f"call_{number}",
            "name": behaviour.tool_name,
            "arguments": behaviour.arguments,
            "status": "completed",
        }
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 0,
        "model": body.get("model", "test-model"),
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": body.get("instructions"),
        "output": [item],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "temperature": body.get("temperature"),
        "top_p": 1.0,
        "text": {"format": {"type": "text"}},
        "usage": _responses_usage(body, text),
    }


def _compact_payload(number: int, behaviour: Behaviour, body: Mapping[str, Any], text: str) -> Any:
    """POST /v1/responses/compact: the user messages kept, then one opaque compaction item
    (bound to the request's model by the handler)."""
    items = body.get("input") or []
    users = [item for item in items if isinstance(item, dict) and item.get("role") == "user"]
    item = {"type": "compaction", "id": f"cmp_{number}", "encrypted_content": f"opaque:{text}"}
    return {
        "id": f"cmp_resp_{number}",
        "object": "response.compaction",
        "created_at": 0,
        "output": [*users, *([] if behaviour.kind == "no_item" else [item])],
        "usage": _responses_usage(body, text),
    }


_PAYLOADS = {
    "/v1/chat/completions": _chat_payload,
    "/v1/responses": _responses_payload,
    "/v1/responses/compact": _compact_payload,
}


def _unreadable_item(state: _State, body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The error for a compaction item in the input that the request's model cannot read."""
    items = body.get("input")
    model = str(body.get("model"))
    for item in items if isinstance(items, list) else []:
        if not (isinstance(item, Mapping) and item.get("type") == "compaction"):
            continue
        with state.lock:
            bound = state.bound.get(str(item.get("id")))
        if bound != model:
            return {
                "message": "The encrypted content could not be decrypted or parsed.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_encrypted_content",
            }
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: pytest shows failures, not access logs."""

    def do_POST(self) -> None:
        state = self.server.state
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_json"}})
            return
        with state.lock:
            headers = {key.lower(): value for key, value in self.headers.items()}
            state.requests.append(RecordedRequest(self.path, body, headers))
            state.lock.notify_all()
            behaviour = state.queue.popleft() if state.queue else ok()
            state.counter += 1
            number = state.counter
        build = _PAYLOADS.get(self.path.split("?")[0])
        if build is None:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        unreadable = _unreadable_item(state, body)
        if unreadable is not None:
            self._send(400, {"error": unreadable})
            return
        if body.get("stream"):
            message = "streaming is not supported by the test server"
            self._send(400, {"error": {"message": message, "type": "invalid_request_error"}})
            return
        while behaviour.kind == "sleep":
            if state.stopping.wait(behaviour.seconds):
                return
            behaviour = behaviour.then or ok()
        if behaviour.kind == "status":
            self._send(behaviour.status, {"error": dict(behaviour.error or {})})
            return
        text = self.server.default(body) if behaviour.text is None else behaviour.text
        payload = build(number, behaviour, body, text)
        if build is _compact_payload:
            with state.lock:
                state.bound[f"cmp_{number}"] = str(body.get("model"))
        self._send(200, payload)

    def _send(self, code: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", "req_test")
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass


class OpenAIServer:
    """The server; use it as a context manager, then point a client at `base_url`."""

    def __init__(self, default: Callable[[Mapping[str, Any]], str] = echo_text) -> None:
        self._state = _State()
        self._server = _Server(self._state, default)
        # A short poll interval keeps close() (and so each test's teardown) fast.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, oldest first (a copy)."""
        with self._state.lock:
            return list(self._state.requests)

    def wait_for_requests(self, count: int, timeout_s: float = 10.0) -> list[RecordedRequest]:
        """The requests once at least `count` have arrived (or all so far after `timeout_s`).

        A client that gave up early (a timeout test) has sent its request, but on a loaded
        machine the server's thread may read it only after the client's error is raised.
        """
        with self._state.lock:
            self._state.lock.wait_for(lambda: len(self._state.requests) >= count, timeout_s)
            return list(self._state.requests)

    def bound_model(self, item_id: str) -> str | None:
        """The model compaction item `item_id` is bound to (None: never issued here)."""
        with self._state.lock:
            return self._state.bound.get(item_id)

    def enqueue(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests, in order."""
        with self._state.lock:
            self._state.queue.extend(behaviours)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Stop serving; delayed replies still pending are abandoned."""
        self._state.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> OpenAIServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
