"""A real multi-agent Runner conversation for tests: triage hands off to billing, billing
calls a tool and answers, then a second turn continues with billing. ScriptedModel, no
network."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool
from agents.memory import Session
from agents.testing import ScriptedModel, assistant_message, function_call

PROMPTS = ("please refund order A7", "thanks!")
# The agent that produced each item the SDK stores for the conversation, in order: the
# user's input (no agent), triage's handoff call and its output, billing's tool call, its
# output and answer, the second prompt, billing's second answer.
PRODUCERS = (None, "triage", "triage", "billing", "billing", "billing", None, "billing")


@function_tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"order {order} refunded"


@dataclass(frozen=True)
class HandoffRun:
    """What a scripted handoff conversation did: every model input, and who answered."""

    inputs: list[list[Any]]
    last_agents: list[str]


async def converse_with_handoff(
    session: Session, *, nest: bool = False, streamed: bool = False
) -> HandoffRun:
    """Two Runner turns over `session`: triage hands off to billing (which calls `refund`),
    then the user thanks billing. `nest` turns on the SDK's nested handoff history."""
    model = ScriptedModel(
        [
            [function_call("transfer_to_billing", {}, call_id="handoff_1")],
            [function_call("refund", {"order": "A7"}, call_id="call_1")],
            [assistant_message("Order A7 is refunded.")],
            [assistant_message("You are welcome.")],
        ]
    )
    billing = Agent(name="billing", instructions="Refund orders.", model=model, tools=[refund])
    triage = Agent(name="triage", instructions="Route.", model=model, handoffs=[billing])
    config = RunConfig(nest_handoff_history=nest)
    agent: Agent[Any] = triage
    answered: list[str] = []
    for prompt in PROMPTS:
        if streamed:
            result: Any = Runner.run_streamed(agent, prompt, session=session, run_config=config)
            async for _ in result.stream_events():
                pass
        else:
            result = await Runner.run(agent, prompt, session=session, run_config=config)
        agent = result.last_agent
        answered.append(agent.name)
    model.assert_complete()
    return HandoffRun([list(call.input) for call in model.calls], answered)
