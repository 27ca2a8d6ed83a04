"""SQLSession behaves like the SDK's own session stores, from the Runner's point of view."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest
from agents import Agent, Runner, SQLiteSession, function_tool
from agents.extensions.memory import SQLAlchemySession
from agents.memory import Session
from agents.testing import ScriptedModel, assistant_message, function_call

from sessionstore import SessionStore, SQLSession


@function_tool
def get_weather(city: str) -> str:
    """Return the weather for a city."""
    return f"18C and sunny in {city}"


def _script() -> list[Any]:
    """Three turns: a plain answer, a tool round trip, another answer."""
    return [
        [assistant_message("Hello! How can I help?")],
        [function_call("get_weather", {"city": "Paris"}, call_id="call_1")],
        [assistant_message("It is 18C and sunny in Paris.")],
        [assistant_message("You asked about Paris.")],
    ]


async def _run_three_turns(session: Any) -> tuple[list[str], list[Any]]:
    model = ScriptedModel(_script())
    agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=[get_weather])
    outputs = []
    for prompt in ("hi", "weather in Paris?", "what did I ask?"):
        result = await Runner.run(agent, prompt, session=session)
        outputs.append(str(result.final_output))
    model.assert_complete()
    return outputs, [call.input for call in model.calls]


def _normalize(items: list[Any]) -> list[Any]:
    return [dict(item) for item in items]


async def test_sqlsession_is_an_sdk_session(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url) as store:
        assert isinstance(SQLSession("s", store), Session)


async def test_runner_sees_identical_history_as_with_sdk_sqlite_session(
    db_url: str, tmp_path: Path
) -> None:
    sdk_session = SQLiteSession("conv", str(tmp_path / "sdk.db"))
    sdk_outputs, sdk_inputs = await _run_three_turns(sdk_session)
    async with SessionStore(db_url, create_tables=True) as store:
        ours = SQLSession("conv", store)
        our_outputs, our_inputs = await _run_three_turns(ours)
        assert our_outputs == sdk_outputs
        assert our_inputs == sdk_inputs  # the model saw exactly the same input every call
        assert _normalize(await ours.get_items()) == _normalize(await sdk_session.get_items())
        for limit in (1, 2, 5, 100):
            assert await ours.get_items(limit) == await sdk_session.get_items(limit)
        # A fresh store (as after a restart) replays the same conversation to the Runner.
    async with SessionStore(db_url) as reopened:
        assert await SQLSession("conv", reopened).get_items() == await sdk_session.get_items()
    sdk_session.close()


async def test_pop_and_clear_match_sdk_semantics(sqlite_url: str, tmp_path: Path) -> None:
    sdk = SQLiteSession("s", str(tmp_path / "sdk.db"))
    items: list[Any] = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    async with SessionStore(sqlite_url) as store:
        ours = SQLSession("s", store)
        for session in (sdk, ours):
            await session.add_items(items)
        assert await ours.pop_item() == await sdk.pop_item()
        assert await ours.get_items() == await sdk.get_items()
        await ours.clear_session()
        await sdk.clear_session()
        assert await ours.get_items() == await sdk.get_items() == []
        assert await ours.pop_item() is await sdk.pop_item() is None
        await ours.add_items([])
        assert await ours.get_items() == []
    sdk.close()


async def test_session_settings_limit_applies_when_no_limit_is_given(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url) as store:
        session = SQLSession("s", store, session_settings={"limit": 2})
        items: list[Any] = [{"role": "user", "content": f"m{i}"} for i in range(4)]
        await session.add_items(items)
        assert await session.get_items() == items[2:]
        assert await session.get_items(limit=3) == items[1:]


async def test_from_url_is_a_drop_in_for_sqlalchemy_session(db_url: str) -> None:
    ours = SQLSession.from_url("conv", url=db_url, create_tables=True)
    sdk = SQLAlchemySession.from_url(
        "conv",
        url=db_url.replace("sqlite:///", "sqlite+aiosqlite:///"),
        create_tables=True,
    )
    try:
        our_outputs, _ = await _run_three_turns(ours)
        sdk_outputs, _ = await _run_three_turns(sdk)
        assert our_outputs == sdk_outputs
        assert await ours.get_items() == await sdk.get_items()
    finally:
        await ours.close()
        await sdk.engine.dispose()


async def test_concurrent_sessions_through_one_store(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        sessions = [SQLSession(f"user-{n}", store) for n in range(20)]

        async def chat(session: SQLSession, n: int) -> None:
            for k in range(3):
                await session.add_items([{"role": "user", "content": f"{n}:{k}"}])

        await asyncio.gather(*(chat(s, n) for n, s in enumerate(sessions)))
        for n, session in enumerate(sessions):
            assert [cast(dict[str, Any], i)["content"] for i in await session.get_items()] == [
                f"{n}:{k}" for k in range(3)
            ]


def test_session_id_must_be_a_string(sqlite_url: str) -> None:
    with pytest.raises(TypeError, match="session_id must be a str"):
        SQLSession(7, SessionStore(sqlite_url))  # type: ignore[arg-type]
