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

from agents.tracing import get_current_span
from agents.tracing.span_data import AgentSpanData

from ... import check_agent_name


def producing_agent() -> str | None:
    """The name of the agent whose span is current, when it can be stored; None otherwise
    (outside an agent's span, or a name `check_agent_name` refuses: a run never fails over
    what its agent is called)."""
    span = get_current_span()
    if span is None or not isinstance(span.span_data, AgentSpanData):
        return None
    try:
        return check_agent_name(span.span_data.name)
    except (TypeError, ValueError):
        return None
