"""Compaction for an Agents SDK agent in a few lines (offline unless OPENAI_API_KEY is set).

Without a key, the SDK's ScriptedModel answers and a tiny 3,000-token window makes
compaction happen within a handful of turns, so you can watch it work.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from agents import Agent, RunConfig, Runner, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message

from sessionstore import SessionStore, text_of
from sessionstore.adapters.agents_sdk import SQLSession, input_filter
from sessionstore.compaction import CompactionConfig, CompactionManager
from sessionstore.exporters import ConsoleExporter, EventBus

SESSION = "minimal-demo"


def _model(turns: int) -> Any:
    if os.environ.get("OPENAI_API_KEY"):
        return "gpt-4o-mini"
    set_tracing_disabled(True)
    return ScriptedModel([[assistant_message(f"Noted fact {n}. " * 40)] for n in range(turns)])


async def main(turns: int = 12) -> None:
    # --- enablement: these lines are all it takes ------------------------------
    events = EventBus([ConsoleExporter()])  # every compaction decision, on stderr
    store = SessionStore(publisher=events)  # ./sessionstore.db
    manager = CompactionManager(CompactionConfig(max_context_tokens=3_000, store=store))
    session = SQLSession(SESSION, manager=manager)
    run_config = RunConfig(call_model_input_filter=input_filter(manager))
    agent = Agent(name="assistant", instructions="Be brief.", model=_model(turns))
    # ----------------------------------------------------------------------------
    await session.clear_session()
    for n in range(turns):
        await Runner.run(agent, f"Remember fact {n}.", session=session, run_config=run_config)
    info = await store.session_info(SESSION)
    assert info is not None
    print(f"{turns} turns, {info.compaction_count} compactions, {info.context_tokens} tokens now")
    # What the model sees in place of the compacted turns: the latest summary.
    texts = [text_of(item) for item in await session.get_items()]
    print(next(text for text in texts if text.startswith("<COMPACT-SUMMARY")))
    await store.close()  # flushes the console exporter


if __name__ == "__main__":
    asyncio.run(main())
