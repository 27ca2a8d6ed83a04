import asyncio
import os
import sys

from agents import Agent, Runner

from sessionstore import SessionStore, SQLSession


async def main() -> None:
    store = SessionStore()  # ./sessionstore.db; or SessionStore("postgresql+asyncpg://u@host/db")
    agent = Agent(name="assistant", instructions="Be brief.", model="gpt-4o-mini")
    session = SQLSession("user-42", store)
    await Runner.run(agent, "Hi, I'm Ada.", session=session)
    result = await Runner.run(agent, "What's my name?", session=session)
    print(result.final_output, await store.context_tokens("user-42"), "tokens")
    await store.close()


if not os.environ.get("OPENAI_API_KEY"):  # checked before anything is stored
    sys.exit(
        "quickstart: set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible "
        "server); `sessionstore demo` shows the store at work without a key"
    )
asyncio.run(main())
