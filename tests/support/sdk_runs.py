"""Real Agents SDK runs for tests: the Runner with ScriptedModel, no network."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from agents import Agent, Runner, function_tool
from agents.extensions.memory import AdvancedSQLiteSession
from agents.memory import Session
from agents.testing import ScriptedModel, assistant_message, function_call

from sessionstore import SessionStore, SQLSession

PROMPTS = ("hi", "what is the weather in Paris?", "thanks")


@function_tool
def get_weather(city: str) -> str:
    """Return the weather for a city."""
    return f"18C and sunny in {city}"


def _three_turn_script() -> list[Any]:
    """Three turns: a plain answer, a tool round trip, another answer."""
    return [
        [assistant_message("Hello! How can I help?")],
        [function_call("get_weather", {"city": "Paris"}, call_id="call_1")],
        [assistant_message("It is 18C and sunny in Paris.")],
        [assistant_message("You asked about Paris.")],
    ]


async def run_three_turns(session: Any) -> tuple[list[str], list[Any]]:
    """Three Runner turns (one with a tool call); the outputs and every model input."""
    model = ScriptedModel(_three_turn_script())
    agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=[get_weather])
    outputs = []
    for prompt in ("hi", "weather in Paris?", "what did I ask?"):
        result = await Runner.run(agent, prompt, session=session)
        outputs.append(str(result.final_output))
    model.assert_complete()
    return outputs, [call.input for call in model.calls]


async def converse(session: Session, prompts: Sequence[str]) -> None:
    """Real Runner turns on an SDK session; a prompt about weather makes a tool round trip."""
    steps: list[Any] = []
    for index, prompt in enumerate(prompts):
        if "weather" in prompt:
            call = function_call("get_weather", {"city": "Paris"}, call_id=f"call_{index}")
            steps += [[call], [assistant_message("It is 18C and sunny in Paris.")]]
        else:
            steps.append([assistant_message(f"You said: {prompt}")])
    model = ScriptedModel(steps)
    agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=[get_weather])
    for prompt in prompts:
        await Runner.run(agent, prompt, session=session)
    model.assert_complete()


@contextlib.asynccontextmanager
async def side_by_side(
    db_url: str, directory: Path, prompts: Sequence[str]
) -> AsyncIterator[tuple[AdvancedSQLiteSession, SQLSession, SessionStore]]:
    """The same Runner conversation through the SDK's AdvancedSQLiteSession (in `directory`)
    and through SQLSession on `db_url`: (theirs, ours, our store)."""
    theirs = AdvancedSQLiteSession(
        session_id="t", db_path=str(directory / "advanced.db"), create_tables=True
    )
    try:
        async with SessionStore(db_url, create_tables=True) as store:
            ours = SQLSession("t", store)
            await converse(theirs, prompts)
            await converse(ours, prompts)
            yield theirs, ours, store
    finally:
        theirs.close()


@contextlib.asynccontextmanager
async def both_holding(
    db_url: str, directory: Path, items: Sequence[Any]
) -> AsyncIterator[tuple[AdvancedSQLiteSession, SQLSession]]:
    """The same items added to the SDK's AdvancedSQLiteSession (in `directory`) and to
    SQLSession on `db_url`: (theirs, ours)."""
    theirs = AdvancedSQLiteSession(
        session_id="t", db_path=str(directory / "advanced.db"), create_tables=True
    )
    try:
        async with SessionStore(db_url, create_tables=True) as store:
            ours = SQLSession("t", store)
            await theirs.add_items(list(items))
            await ours.add_items(list(items))
            yield theirs, ours
    finally:
        theirs.close()
