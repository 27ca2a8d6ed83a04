"""A summarizer backed by an OpenAI (or OpenAI-compatible) model.

The client never retries (max_retries=0): the compaction service owns retries and fallbacks,
and a hidden retry would multiply the latency of a step that runs before the user's turn.
Failures are translated into the protocol's exceptions with messages that name the model and
the HTTP status only, never the API key or any of the summarized content.

A client this summarizer creates is kept per event loop (`PerLoop`): its connection pool is
bound to the loop that opened it, and one summarizer serves every thread that runs its own
loop (a web server's `asyncio.run` per request), as the store does.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import replace
from typing import Final, Literal

import openai
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from ..._errors import (
    SummarizerError,
    SummarizerInputTooLargeError,
    SummarizerUnavailableError,
    SummaryRefusedError,
    SummaryToolCallError,
    SummaryTooLongError,
)
from ..._loops import PerLoop
from ._extractive import current_state
from ._prompts import build_messages, build_prompt
from ._provider_errors import is_context_length_error
from ._summarizer import SummaryRequest, SummaryResult

__all__ = ["PLACEHOLDER_API_KEY", "OpenAISummarizer"]

# Local OpenAI-compatible servers (vLLM, Ollama, LM Studio) ignore the key but the client
# insists on one.
PLACEHOLDER_API_KEY: Final = "sk-no-key-required"

# Statuses worth trying again later: timeouts, conflicts, rate limits and server errors.
_TRANSIENT_STATUSES: Final = frozenset({408, 409, 429})
# Error codes are identifiers such as "rate_limit_exceeded"; anything else is not echoed.
_ERROR_CODE: Final = re.compile(r"[\w.-]{1,64}")


def _drop(client: openai.AsyncOpenAI) -> None:
    """A client whose loop closed without a shutdown cannot be awaited: left to the collector."""


class OpenAISummarizer:
    """Summaries from a chat model at temperature 0 with a fixed seed, without tools."""

    input_window: int | None

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        seed: int = 42,
        api: Literal["chat", "responses"] = "chat",
        input_window: int | None = None,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        if client is not None and (base_url is not None or api_key is not None):
            raise ValueError("pass either client or base_url/api_key, not both")
        self.model = model
        self.name = f"openai:{model}"
        self.input_window = input_window
        self.timeout = timeout
        self.seed = seed
        self.api = api
        # A given client is the caller's, bound to the loop(s) the caller uses it on.
        self._given = (
            None if client is None else client.with_options(timeout=timeout, max_retries=0)
        )
        # Read from the environment once: every loop's client talks to the same endpoint.
        key = api_key or os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_API_KEY
        if base_url is None:
            base_url = os.environ.get("OPENAI_BASE_URL")

        def make() -> openai.AsyncOpenAI:
            return openai.AsyncOpenAI(
                api_key=key, base_url=base_url, timeout=timeout, max_retries=0
            )

        # Ours: one client per event loop, closed when that loop shuts down (or by aclose).
        self._clients: PerLoop[openai.AsyncOpenAI] = PerLoop(make, openai.AsyncOpenAI.close, _drop)

    @property
    def _client(self) -> openai.AsyncOpenAI:
        """The client for the running loop: the given one, or this loop's own."""
        return self._given if self._given is not None else self._clients.current()

    async def aclose(self) -> None:
        """Close the HTTP connections of every client this summarizer created (any loop)."""
        await self._clients.close_all()

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """One tool-free call; every failure becomes a SummarizerError subclass."""
        if not request.state:  # the structured state, so that the model keeps it current
            request = replace(request, state=tuple(await asyncio.to_thread(current_state, request)))
        try:
            if self.api == "responses":
                return self._from_response(await self._respond(request))
            return self._from_completion(await self._complete(request))
        except openai.OpenAIError as exc:
            raise self._translate(exc) from None  # the cause carries the request: keep it out

    async def _complete(self, request: SummaryRequest) -> ChatCompletion:
        return await self._client.chat.completions.create(
            model=self.model,
            messages=build_messages(request),
            temperature=0,
            seed=self.seed,
            max_tokens=request.max_tokens,
        )

    async def _respond(self, request: SummaryRequest) -> Response:
        instructions, prompt = build_prompt(request)
        return await self._client.responses.create(
            model=self.model,
            instructions=instructions,
            input=prompt,
            temperature=0,
            max_output_tokens=request.max_tokens,
            store=False,  # summaries of user data are not kept server-side
        )

    def _from_completion(self, completion: ChatCompletion) -> SummaryResult:
        if not completion.choices:
            raise SummarizerError(f"{self.name} returned no choices")
        choice = completion.choices[0]
        message = choice.message
        if message.refusal or choice.finish_reason == "content_filter":
            raise SummaryRefusedError(f"{self.name} refused to summarize")
        if message.tool_calls or message.function_call:
            raise SummaryToolCallError(f"{self.name} answered with tool calls instead of text")
        if choice.finish_reason == "length":
            raise SummaryTooLongError(f"{self.name} hit max_tokens before finishing")
        usage = completion.usage
        return self._result(message.content, usage.completion_tokens if usage else None)

    def _from_response(self, response: Response) -> SummaryResult:
        if response.status == "failed":
            code = response.error.code if response.error else "unknown"
            raise SummarizerError(f"{self.name} failed to respond ({code})")
        for item in response.output:
            if item.type.endswith("_call"):
                raise SummaryToolCallError(f"{self.name} answered with tool calls instead of text")
            if item.type == "message" and any(part.type == "refusal" for part in item.content):
                raise SummaryRefusedError(f"{self.name} refused to summarize")
        reason = response.incomplete_details.reason if response.incomplete_details else None
        if reason == "content_filter":
            raise SummaryRefusedError(f"{self.name} refused to summarize")
        if reason == "max_output_tokens":
            raise SummaryTooLongError(f"{self.name} hit max_output_tokens before finishing")
        usage = response.usage
        return self._result(response.output_text, usage.output_tokens if usage else None)

    def _result(self, content: str | None, output_tokens: int | None) -> SummaryResult:
        text = (content or "").strip()
        if not text:
            raise SummarizerError(f"{self.name} returned an empty summary")
        return SummaryResult(text=text, model=self.model, output_tokens=output_tokens)

    def _translate(self, exc: openai.OpenAIError) -> SummarizerError:
        """Map a client error to the failure kind the compaction service reacts to."""
        if is_context_length_error(exc):
            return SummarizerInputTooLargeError(
                f"the summarization input exceeds {self.name}'s context window"
            )
        if isinstance(exc, openai.APITimeoutError):
            return SummarizerUnavailableError(f"{self.name} timed out after {self.timeout:g}s")
        if isinstance(exc, openai.APIConnectionError):
            return SummarizerUnavailableError(f"could not connect to {self.name}")
        if isinstance(exc, openai.APIStatusError):
            detail = f"{self.name} answered HTTP {exc.status_code}"
            if exc.code and _ERROR_CODE.fullmatch(exc.code):
                detail += f" ({exc.code})"
            if exc.status_code >= 500 or exc.status_code in _TRANSIENT_STATUSES:
                return SummarizerUnavailableError(detail)
            return SummarizerError(detail)
        return SummarizerError(f"{self.name} failed: {type(exc).__name__}")
