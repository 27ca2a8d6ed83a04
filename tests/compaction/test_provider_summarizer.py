"""The provider summarizer through the real openai client against a real local HTTP server:
what it sends to `/v1/responses/compact`, what it makes of the answer, and how each failure
maps into the exception tree the compaction service reacts to."""

from __future__ import annotations

from typing import Any

import pytest

from sessionstore._errors import (
    SummarizerError,
    SummarizerInputTooLargeError,
    SummarizerUnavailableError,
)
from sessionstore.compaction._summarizers._prompts import resolve_strategy
from sessionstore.compaction._summarizers._provider import ProviderSummarizer
from sessionstore.compaction._summarizers._summarizer import Summarizer, SummaryRequest
from tests.support.openai_server import (
    OpenAIServer,
    context_length_error,
    no_compaction_item,
    ok,
    sleep,
    status,
)
from tests.support.summarizers import SummarizerMaker

SECRET_KEY = "sk-test-SECRET-0123456789"
ITEMS = [
    {"role": "user", "content": "Deploy JIRA-7 to staging.", "meta": {"protected": False}},
    {"role": "assistant", "content": "Deploying."},
]
PUBLIC_ITEMS = [{"role": "user", "content": "Deploy JIRA-7 to staging."}, ITEMS[1]]


def request(**changes: Any) -> SummaryRequest:
    fields: dict[str, Any] = {
        "items": ITEMS,
        "prior_summary": None,
        "strategy": "task_state",
        "instructions": resolve_strategy("task_state").prompt,
        "max_tokens": 256,
        **changes,
    }
    return SummaryRequest(**fields)


def provider(
    summarizers: SummarizerMaker, model: str = "gpt-5", **options: Any
) -> ProviderSummarizer:
    """A provider summarizer pointed at the live server, closed after the test."""
    return summarizers(ProviderSummarizer, model, **{"api_key": SECRET_KEY, **options})


async def test_the_answer_is_the_compaction_item_verbatim_with_its_binding_and_usage(
    openai_server: OpenAIServer, summarizers: SummarizerMaker
) -> None:
    openai_server.enqueue(ok("three word state"))
    summarizer = provider(summarizers)
    assert isinstance(summarizer, Summarizer)
    result = await summarizer.summarize(request())
    assert result.item == {
        "type": "compaction",
        "id": "cmp_1",
        "encrypted_content": "opaque:three word state",
    }
    assert (result.provider, result.model, result.output_tokens) == ("openai", "gpt-5", 3)
    assert "opaque:" not in result.text and "cmp_1" in result.text  # it only describes
    [sent] = openai_server.requests
    assert sent.path == "/v1/responses/compact"
    assert sent.body == {"model": "gpt-5", "input": PUBLIC_ITEMS}  # no private `meta`
    assert sent.headers["authorization"] == f"Bearer {SECRET_KEY}"


async def test_the_previous_item_goes_back_first_and_an_item_of_another_model_is_refused(
    openai_server: OpenAIServer, summarizers: SummarizerMaker
) -> None:
    summarizer = provider(summarizers)
    first = await summarizer.summarize(request())
    await summarizer.summarize(request(prior_item=first.item))
    assert openai_server.requests[1].body["input"] == [first.item, *PUBLIC_ITEMS]
    with pytest.raises(SummarizerError, match="invalid_encrypted_content"):
        await provider(summarizers, "gpt-4.1").summarize(request(prior_item=first.item))


async def test_a_readable_prior_summary_goes_first_as_an_assistant_message(
    openai_server: OpenAIServer, summarizers: SummarizerMaker
) -> None:
    await provider(summarizers).summarize(request(prior_summary="## Goals\n- ship v2"))
    prior = {"role": "assistant", "content": "## Goals\n- ship v2"}
    assert openai_server.requests[0].body["input"] == [prior, *PUBLIC_ITEMS]


@pytest.mark.parametrize(
    ("behaviour", "error", "fragment"),
    [
        (status(503), SummarizerUnavailableError, "HTTP 503"),
        (status(429, "slow down", code="rate_limit_exceeded"), SummarizerUnavailableError, "429"),
        (context_length_error(), SummarizerInputTooLargeError, "context window"),
        (
            status(400, "bad", code="invalid_encrypted_content"),
            SummarizerError,
            "invalid_encrypted",
        ),
        (no_compaction_item(), SummarizerError, "no compaction item"),
        (sleep(2), SummarizerUnavailableError, "timed out"),
    ],
    ids=["5xx", "rate limit", "context length", "4xx", "no item", "timeout"],
)
async def test_failures_map_into_the_exception_tree_without_the_key(
    openai_server: OpenAIServer,
    summarizers: SummarizerMaker,
    behaviour: Any,
    error: type[SummarizerError],
    fragment: str,
) -> None:
    openai_server.enqueue(behaviour)
    with pytest.raises(error) as raised:
        await provider(summarizers, timeout=0.3).summarize(request())
    assert type(raised.value) is error
    assert fragment in str(raised.value) and "provider:openai:gpt-5" in str(raised.value)
    assert SECRET_KEY not in str(raised.value) and raised.value.__cause__ is None


async def test_an_unreachable_endpoint_is_unavailable(summarizers: SummarizerMaker) -> None:
    summarizer = provider(summarizers, base_url="http://127.0.0.1:9/v1", timeout=1)
    with pytest.raises(SummarizerUnavailableError, match="could not connect"):
        await summarizer.summarize(request())


def test_it_reads_only_items_of_its_own_provider_and_model(summarizers: SummarizerMaker) -> None:
    summarizer = provider(summarizers, provider="azure-openai")
    assert summarizer.can_read("azure-openai", "gpt-5")
    assert not summarizer.can_read("openai", "gpt-5")
    assert not summarizer.can_read("azure-openai", "gpt-4.1")
