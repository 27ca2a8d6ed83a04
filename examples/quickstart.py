"""The README quick start: an Agents SDK agent whose memory lives in sessionstore.

With OPENAI_API_KEY set it talks to the real model; without it the SDK's
ScriptedModel answers, so the example runs offline (CI runs it that way).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from agents import Agent, Runner, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message

from sessionstore import SessionStore, SQLSession


def _model() -> Any:
    if os.environ.get("OPENAI_API_KEY"):
        return "gpt-4o-mini"
    set_tracing_disabled(True)
    return ScriptedModel(
        [[assistant_message("Nice to meet you, Ada!")], [assistant_message("You are Ada.")]]
    )


async def main() -> None:
    # --- the ten lines of the README -----------------------------------------
    store = SessionStore()  # ./sessionstore.db ($SESSIONSTORE_URL if set), or a URL
    agent = Agent(name="assistant", instructions="Be brief.", model=_model())
    session = SQLSession("user-42", store)
    await session.clear_session()  # start fresh each time the example runs
    await Runner.run(agent, "Hi, I'm Ada.", session=session)
    result = await Runner.run(agent, "What's my name?", session=session)
    print(result.final_output)
    print(len(await session.get_items()), "items,", await store.context_tokens("user-42"), "tokens")
    await store.close()


if __name__ == "__main__":
    asyncio.run(main())
