"""Recognize "the prompt did not fit the model's context window" across providers.

Compaction reacts to this one failure differently from every other (trim the input and
retry), and the Agents SDK and provider SDKs wrap it in their own exceptions, so the check
walks the whole exception chain and matches both OpenAI's error code and the wording other
OpenAI-compatible providers use.
"""

from __future__ import annotations

import sys
from typing import Final

__all__ = ["CONTEXT_LENGTH_CODE", "CONTEXT_LENGTH_MARKERS", "is_context_length_error"]

CONTEXT_LENGTH_CODE: Final = "context_length_exceeded"

# Lower-case fragments of the messages OpenAI, Anthropic, vLLM, Bedrock, Gemini and friends
# send when the input is larger than the model's window.
CONTEXT_LENGTH_MARKERS: Final = (
    "maximum context length",
    CONTEXT_LENGTH_CODE,
    "prompt is too long",
    "too many tokens",
    "input is too long",
    "exceeds the context window",
    "context window exceeded",
)


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and everything it wraps (cause, context, group members), each once."""
    seen: set[int] = set()
    found: list[BaseException] = []
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        stack.extend(e for e in (current.__context__, current.__cause__) if e is not None)
    return found


def _says_context_length(exc: BaseException) -> bool:
    if getattr(exc, "code", None) == CONTEXT_LENGTH_CODE:
        return True
    openai = sys.modules.get("openai")  # an openai error exists only once openai is imported
    if openai is not None and isinstance(exc, openai.RateLimitError):
        # "Request too large ... tokens per min" is a rate limit, not a window overflow.
        return False
    text = str(exc).lower()
    return any(marker in text for marker in CONTEXT_LENGTH_MARKERS)


def is_context_length_error(exc: BaseException) -> bool:
    """True when `exc`, or any exception it wraps, says the input exceeded the context window."""
    return any(_says_context_length(e) for e in _causes(exc))
