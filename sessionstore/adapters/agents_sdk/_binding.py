"""Which provider and model an agent's next call goes to, as compaction items are bound.

A provider's compaction item can be read only by the provider and model that made it, so
the pre-flight compares the marker's binding with the agent's model. A model name may
carry the SDK's provider prefix (`openai/gpt-5`, `litellm/anthropic/claude-...`); a bare
name goes to OpenAI (the SDK's default provider); a Chat Completions model cannot read a
Responses compaction item whatever its name. A model the SDK cannot name (a test double)
gives None: nothing is known to compare, so nothing is rebuilt.
"""

from __future__ import annotations

from typing import Any

from agents import Agent
from agents.models import get_default_model
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.models.openai_responses import OpenAIResponsesModel

__all__ = ["call_binding"]


def _named(name: str) -> tuple[str, str]:
    prefix, slash, rest = name.partition("/")
    return (prefix, rest) if slash and rest else ("openai", name)


def call_binding(agent: Agent[Any]) -> tuple[str, str] | None:
    """(provider, model) of the agent's model calls, or None when the model has no name."""
    model = agent.model
    if model is None:
        return _named(get_default_model())
    if isinstance(model, str):
        return _named(model)
    name = getattr(model, "model", None)
    if not isinstance(name, str):
        return None
    if isinstance(model, OpenAIResponsesModel):
        return ("openai", name)
    if isinstance(model, OpenAIChatCompletionsModel):
        return ("openai-chat-completions", name)
    return (type(model).__name__, name)
