"""The `sessionstore demo` scenario: a real Agents SDK run, a restart, the same context.

It needs no API key: the SDK's ScriptedModel plays the model, so what the demo
shows (rows written, context reloaded by a fresh store, token totals) is exactly
what a real run stores.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from .session import SQLSession
from .store import SessionStore, StoredRow

DEMO_SESSION = "demo"
PROMPTS = (
    "Hi! I'm planning a trip to Paris next week.",
    "What's the weather going to be like there?",
    "And in Lyon?",
    "Thanks. Summarize what you told me.",
)


@function_tool
def get_weather(city: str) -> str:
    """Look up the forecast for a city (a fixed answer, for the demo)."""
    forecasts = {"Paris": "18C, light rain on Tuesday", "Lyon": "22C and sunny all week"}
    return forecasts.get(city, "no forecast available")


def _script() -> list[Any]:
    return [
        [assistant_message("Lovely! Ask me anything about the trip.")],
        [function_call("get_weather", {"city": "Paris"}, call_id="call_paris")],
        [assistant_message("Paris: 18C with light rain on Tuesday. Pack an umbrella.")],
        [function_call("get_weather", {"city": "Lyon"}, call_id="call_lyon")],
        [assistant_message("Lyon: 22C and sunny all week.")],
        [assistant_message("Paris is 18C with rain on Tuesday; Lyon is 22C and sunny.")],
    ]


@dataclass(frozen=True)
class DemoResult:
    """What the demo observed, for printing and for tests."""

    answers: list[str]
    rows: list[StoredRow]
    tokens_before_restart: int
    tokens_after_restart: int
    context_before_restart: list[dict[str, Any]]
    context_after_restart: list[dict[str, Any]]
    tool_calls: list[tuple[str, int]]


# What an analyst would ask of the history: which tools did this session call, how often?
TOOLS_QUERY = """
SELECT tool_name, count(*) AS calls
FROM messages
WHERE session_id = :session_id AND kind = 'item' AND item_type = 'function_call'
GROUP BY tool_name ORDER BY calls DESC
"""


async def run_demo(url: str | None = None, session_id: str = DEMO_SESSION) -> DemoResult:
    """Run the conversation, close the store, reopen it and reload the context."""
    if not os.environ.get("OPENAI_API_KEY"):
        set_tracing_disabled(True)  # nowhere to send traces; stay quiet about it
    model = ScriptedModel(_script())
    agent = Agent(
        name="travel-assistant",
        instructions="You help plan trips. Be brief.",
        model=model,
        tools=[get_weather],
    )
    async with SessionStore(url, create_tables=True) as store:
        await store.clear(session_id)  # a fresh active context; earlier runs stay in history
        session = SQLSession(session_id, store)
        answers = []
        for prompt in PROMPTS:
            result = await Runner.run(agent, prompt, session=session)
            answers.append(str(result.final_output))
        context_before = await store.load_context(session_id)
        tokens_before = await store.context_tokens(session_id)
        rows = await store.context_rows(session_id)
    async with SessionStore(url) as reopened:  # as after a process restart
        context_after = await reopened.load_context(session_id)
        tokens_after = await reopened.context_tokens(session_id)
        async with reopened.engine.connect() as conn:
            found = await conn.execute(sa.text(TOOLS_QUERY), {"session_id": session_id})
            tool_calls = [(str(name), int(calls)) for name, calls in found]
    return DemoResult(
        answers, rows, tokens_before, tokens_after, context_before, context_after, tool_calls
    )
