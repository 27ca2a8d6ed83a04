"""Which agent produced the items the Runner is saving.

The SDK hands `Session.add_items` plain input items that do not name their agent (its
`RunItem.agent` stays in the Runner). The Runner runs each agent's stint inside an agent
span it marks as the current span, also when tracing is disabled (a no-op span still
carries its data), and it saves a step's items before it ends that span on a handoff; it
saves the user's input before the first span starts. So the current agent span at save
time names the agent that produced the items, and no span means no agent produced them
(user input) or the call came from outside a run.
"""

from __future__ import annotations

import unicodedata

from agents.tracing import get_current_span
from agents.tracing.span_data import AgentSpanData

from ... import check_agent_name
from ..._arguments import MAX_AGENT_NAME


def producing_agent() -> str | None:
    """The name of the agent whose span is current, as it can be stored (`storable`); None
    outside an agent's span (a run never fails over what its agent is called)."""
    span = get_current_span()
    if span is None or not isinstance(span.span_data, AgentSpanData):
        return None
    return storable(span.span_data.name)


def storable(name: object) -> str | None:
    """An agent's name as `messages.agent` can hold it: control characters and lone
    surrogates become U+FFFD and it is cut to MAX_AGENT_NAME characters, so the rows keep
    the attribution, visibly altered, instead of losing it; None for a blank name."""
    if not isinstance(name, str):
        return None
    kept = "".join(
        "\ufffd" if unicodedata.category(char) in ("Cc", "Cs") else char
        for char in name[:MAX_AGENT_NAME]
    )
    try:
        return check_agent_name(kept)
    except ValueError:  # blank
        return None
