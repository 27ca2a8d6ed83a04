"""Recognizing context-window overflows whatever the provider's wording or the SDK's wrapping."""

from __future__ import annotations

import httpx2
import openai
import pytest
from agents.exceptions import ModelBehaviorError

from sessionstore.compaction._summarizers._provider_errors import is_context_length_error


def _status_error(status: int, body: dict[str, object]) -> openai.APIStatusError:
    """The exception the real client raises for an HTTP error (see _make_status_error)."""
    request = httpx2.Request("POST", "https://api.openai.com/v1/chat/completions")
    response = httpx2.Response(status, request=request, json={"error": body})
    errors: dict[int, type[openai.APIStatusError]] = {
        400: openai.BadRequestError,
        429: openai.RateLimitError,
    }
    error_class = errors.get(status, openai.APIStatusError)
    return error_class(f"Error code: {status} - {body}", response=response, body=body)


def test_openai_error_code_is_recognized_whatever_the_message() -> None:
    exc = _status_error(400, {"message": "Too big.", "code": "context_length_exceeded"})
    assert is_context_length_error(exc)


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 8192 tokens. However, you requested 9000.",
        "prompt is too long: 210000 tokens > 200000 maximum",  # Anthropic
        "Input is too long for requested model.",  # Bedrock
        "Request has too many tokens for this model",
        "The input exceeds the context window of this model",
        "ContextWindowExceededError: context window exceeded",  # LiteLLM
    ],
)
def test_provider_messages_are_recognized(message: str) -> None:
    assert is_context_length_error(_status_error(400, {"message": message, "code": None}))
    assert is_context_length_error(RuntimeError(message))


def test_wrapped_errors_are_found_through_cause_and_context() -> None:
    inner = _status_error(400, {"message": "x", "code": "context_length_exceeded"})
    try:
        try:
            raise inner
        except openai.BadRequestError as exc:
            raise ModelBehaviorError("model call failed") from exc
    except ModelBehaviorError as outer:
        assert is_context_length_error(outer)
        wrapped_again = RuntimeError("run failed")
        wrapped_again.__context__ = outer
        assert is_context_length_error(wrapped_again)


def test_exception_groups_are_searched() -> None:
    group = ExceptionGroup("tasks failed", [ValueError("no"), RuntimeError("prompt is too long")])
    assert is_context_length_error(group)


@pytest.mark.parametrize(
    "exc",
    [
        _status_error(400, {"message": "Invalid value for 'temperature'.", "code": None}),
        _status_error(
            429,
            {
                "message": "Request too large for gpt-4o: too many tokens per min (TPM).",
                "code": "rate_limit_exceeded",
            },
        ),
        RuntimeError("connection reset"),
        TimeoutError(),
    ],
)
def test_other_errors_are_not_context_length_errors(exc: BaseException) -> None:
    assert not is_context_length_error(exc)


def test_cyclic_chains_terminate() -> None:
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__context__, second.__context__ = second, first
    assert not is_context_length_error(first)
    second.__cause__ = RuntimeError("maximum context length is 4096 tokens")
    assert is_context_length_error(first)
