"""What the examples run on: a real model and LLM summaries when OPENAI_API_KEY is set
(OPENAI_MODEL and OPENAI_BASE_URL are honoured), else the SDK's ScriptedModel and the
offline, deterministic extractive summarizer, so every example runs without a network."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from agents import set_tracing_disabled
from agents.testing import ScriptedModel

from sessionstore.compaction import OpenAISummarizer, Summarizer


def online() -> bool:
    """True when a real OpenAI-compatible endpoint is configured."""
    return bool(os.environ.get("OPENAI_API_KEY"))


def agent_model(script: Callable[[], list[Any]]) -> Any:
    """The model name to use online; offline, a ScriptedModel playing `script()`."""
    if online():
        return os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    set_tracing_disabled(True)  # no key: nowhere to send SDK traces
    return ScriptedModel(script())


def summarizer() -> Summarizer | None:
    """The OpenAI-compatible summarizer online; None means the offline extractive one."""
    if not online():
        return None
    model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    return OpenAISummarizer(model, base_url=os.environ.get("OPENAI_BASE_URL"))
