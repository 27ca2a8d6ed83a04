"""What the model saw: a real Agents SDK run with masking on, then the viewer's page of each
model call marks the tool outputs that call was sent as placeholders (the stored rows stay
whole; the call's `compact.masked` events say which)."""

from __future__ import annotations

import random
import re
from typing import Any

import httpx
from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from sessionstore import SessionStore, SQLSession
from sessionstore.adapters.agents_sdk import input_filter
from sessionstore.compaction import CompactionConfig, CompactionManager
from sessionstore.web import create_app
from tests.support.histories import words
from tests.support.masking import is_placeholder, masking_policy

TURNS = 5


@function_tool
def read_file(path: str) -> str:
    """Return a (long) file body."""
    return f"contents of {path}: " + words(random.Random(path), 400)


async def _masked_run(url: str) -> list[list[Any]]:
    async with SessionStore(url, create_tables=True) as store:
        manager = CompactionManager(
            CompactionConfig(max_context_tokens=100_000, policy=masking_policy(), store=store)
        )
        steps: list[Any] = []
        for n in range(TURNS):
            steps.append([function_call("read_file", {"path": f"m{n}.py"}, call_id=f"c{n}")])
            steps.append([assistant_message(f"Read m{n}.py.")])
        model = ScriptedModel(steps)
        agent = Agent(name="reader", instructions="Read.", model=model, tools=[read_file])
        session = SQLSession("masked", store, manager=manager)
        config = RunConfig(call_model_input_filter=input_filter(manager))
        for n in range(TURNS):
            await Runner.run(agent, f"Read m{n}.py", session=session, run_config=config)
        return [list(call.input) for call in model.calls]


async def test_a_calls_masked_outputs_are_marked(db_url: str) -> None:
    inputs = await _masked_run(db_url)
    store = SessionStore(db_url, read_only=True)
    transport = httpx.ASGITransport(app=create_app(store))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        last = len(inputs)
        html = (await client.get(f"/call?id=masked&n={last}")).text
        sent_masked = sum(1 for item in inputs[-1] if is_placeholder(item))
        assert sent_masked == TURNS - 2
        assert len(re.findall(r'<span class="masked"', html)) == sent_masked
        first = (await client.get("/call?id=masked&n=1")).text
        assert '<span class="masked"' not in first  # nothing was masked yet
        assert "agent" in (await client.get("/session?id=masked")).text
    await store.close()
