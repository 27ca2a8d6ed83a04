"""The OpenAI summarizer through the real openai client against a real local HTTP server."""

from __future__ import annotations

import socket
import time
import traceback
from collections.abc import Callable
from functools import partial

import openai
import pytest

from sessionstore._errors import (
    SummarizerError,
    SummarizerInputTooLargeError,
    SummarizerUnavailableError,
    SummaryRefusedError,
    SummaryToolCallError,
    SummaryTooLongError,
)
from sessionstore.compaction._summarizers._openai import PLACEHOLDER_API_KEY, OpenAISummarizer
from sessionstore.compaction._summarizers._prompts import (
    build_messages,
    build_prompt,
    resolve_strategy,
)
from sessionstore.compaction._summarizers._summarizer import Summarizer, SummaryRequest
from tests.support.openai_server import (
    Behaviour,
    OpenAIServer,
    content_filter,
    context_length_error,
    length,
    ok,
    refusal,
    sleep,
    status,
    tool_call,
)
from tests.support.summarizers import SummarizerMaker

SECRET_KEY = "sk-test-SECRET-0123456789"
SECRET_CONTENT = "PLANTED-SECRET-CONTENT"
REQUEST = SummaryRequest(
    items=[
        {"role": "user", "content": f"Deploy JIRA-7 to staging. {SECRET_CONTENT}"},
        {"role": "assistant", "content": "Deploying."},
    ],
    prior_summary="## Goals\n- ship v2",
    strategy="task_state",
    instructions=resolve_strategy("task_state").prompt,
    max_tokens=256,
)

Factory = Callable[..., OpenAISummarizer]


@pytest.fixture
def make(summarizers: SummarizerMaker) -> Factory:
    """Summarizers pointed at the live server, closed after the test."""
    return partial(summarizers, OpenAISummarizer, "gpt-4o-mini", api_key=SECRET_KEY)


async def test_chat_success_sends_a_deterministic_tool_free_request(
    make: Factory, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(ok("  ## Goals\n- ship v2\n- deploy JIRA-7  "))
    summarizer = make()
    assert isinstance(summarizer, Summarizer)
    assert (summarizer.name, summarizer.input_window) == ("openai:gpt-4o-mini", None)

    result = await summarizer.summarize(REQUEST)

    assert result.text == "## Goals\n- ship v2\n- deploy JIRA-7"
    assert result.model == "gpt-4o-mini"
    assert result.output_tokens == 8  # as the server reported in usage
    [sent] = openai_server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.body["model"] == "gpt-4o-mini"
    assert sent.body["temperature"] == 0
    assert sent.body["seed"] == 42
    assert sent.body["max_tokens"] == 256
    assert "tools" not in sent.body and "tool_choice" not in sent.body
    assert sent.body["messages"] == build_messages(REQUEST)
    assert sent.headers["authorization"] == f"Bearer {SECRET_KEY}"


async def test_seed_and_input_window_are_configurable(
    make: Factory, openai_server: OpenAIServer
) -> None:
    summarizer = make(seed=7, input_window=8000)
    result = await summarizer.summarize(REQUEST)
    assert result.text.startswith("echo: PRIOR SUMMARY")  # the server's default reply
    assert openai_server.requests[0].body["seed"] == 7
    assert summarizer.input_window == 8000


async def test_responses_api_success(make: Factory, openai_server: OpenAIServer) -> None:
    openai_server.enqueue(ok("- ship v2"))
    result = await make(api="responses").summarize(REQUEST)
    assert (result.text, result.output_tokens) == ("- ship v2", 3)
    [sent] = openai_server.requests
    assert sent.path == "/v1/responses"
    instructions, prompt = build_prompt(REQUEST)
    assert sent.body["instructions"] == instructions
    assert sent.body["input"] == prompt
    assert sent.body["temperature"] == 0
    assert sent.body["max_output_tokens"] == 256
    assert sent.body["store"] is False
    assert "tools" not in sent.body


FAILURES: list[tuple[Behaviour, type[SummarizerError]]] = [
    (status(500), SummarizerUnavailableError),
    (status(503, "overloaded"), SummarizerUnavailableError),
    (status(429, "Rate limit reached", code="rate_limit_exceeded"), SummarizerUnavailableError),
    (context_length_error(), SummarizerInputTooLargeError),
    (refusal(), SummaryRefusedError),
    (content_filter(), SummaryRefusedError),
    (length(), SummaryTooLongError),
    (tool_call("grep", {"pattern": "x"}), SummaryToolCallError),
    (ok("   "), SummarizerError),
    (status(401, f"Incorrect API key {SECRET_KEY}", code="invalid_api_key"), SummarizerError),
    (status(400, f"bad input: {SECRET_CONTENT}"), SummarizerError),
]


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize(("behaviour", "error"), FAILURES)
async def test_failures_map_to_the_protocol_errors_without_leaking(
    make: Factory,
    openai_server: OpenAIServer,
    api: str,
    behaviour: Behaviour,
    error: type[SummarizerError],
) -> None:
    openai_server.enqueue(behaviour, ok("never reached"))
    with pytest.raises(SummarizerError) as info:
        await make(api=api).summarize(REQUEST)
    assert type(info.value) is error
    assert len(openai_server.requests) == 1  # no hidden retries: the service owns them
    assert "gpt-4o-mini" in str(info.value)
    shown = "".join(traceback.format_exception(info.value))  # what a log would print
    assert SECRET_KEY not in shown and SECRET_CONTENT not in shown


async def test_status_errors_name_the_status_and_code(
    make: Factory, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(status(401, "no", code="invalid_api_key"), status(404, code="a b c"))
    summarizer = make()
    with pytest.raises(SummarizerError, match=r"HTTP 401 \(invalid_api_key\)$"):
        await summarizer.summarize(REQUEST)
    with pytest.raises(SummarizerError, match=r"HTTP 404$"):  # odd codes are not echoed
        await summarizer.summarize(REQUEST)


async def test_a_slow_server_times_out_as_unavailable(
    make: Factory, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(sleep(1.0))
    started = time.monotonic()
    with pytest.raises(SummarizerUnavailableError, match=r"timed out after 0\.3s"):
        await make(timeout=0.3).summarize(REQUEST)
    assert time.monotonic() - started < 0.9
    assert len(openai_server.wait_for_requests(1)) == 1


async def test_nobody_listening_is_unavailable(make: Factory) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    summarizer = make(base_url=f"http://127.0.0.1:{port}/v1", timeout=2.0)
    with pytest.raises(SummarizerUnavailableError, match="could not connect"):
        await summarizer.summarize(REQUEST)


async def test_the_api_key_falls_back_to_the_environment_then_a_placeholder(
    make: Factory, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    await make(api_key=None).summarize(REQUEST)
    monkeypatch.delenv("OPENAI_API_KEY")
    await make(api_key=None).summarize(REQUEST)
    keys = [sent.headers["authorization"] for sent in openai_server.requests]
    assert keys == ["Bearer sk-from-env", f"Bearer {PLACEHOLDER_API_KEY}"]


async def test_a_given_client_is_used_without_retries(openai_server: OpenAIServer) -> None:
    client = openai.AsyncOpenAI(base_url=openai_server.base_url, api_key="k", max_retries=5)
    openai_server.enqueue(status(500), ok("second"))
    summarizer = OpenAISummarizer("local-model", client=client)
    try:
        with pytest.raises(SummarizerUnavailableError):
            await summarizer.summarize(REQUEST)
        assert len(openai_server.requests) == 1
        assert (await summarizer.summarize(REQUEST)).text == "second"
        await summarizer.aclose()  # not ours to close
        assert not client.is_closed()
    finally:
        await client.close()


def test_client_and_connection_options_are_exclusive(openai_server: OpenAIServer) -> None:
    client = openai.AsyncOpenAI(base_url=openai_server.base_url, api_key="k")
    with pytest.raises(ValueError, match="either client or base_url/api_key"):
        OpenAISummarizer("m", client=client, api_key="other")
