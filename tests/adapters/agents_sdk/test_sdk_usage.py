"""AdvancedSQLiteSession's usage calls on SQLSession: `store_run_usage` after a run this
session recorded stores nothing twice; usage it never saw lands in the current turn, with
the SDK's totals; `get_session_usage(branch_id)` sums every branch or one, on both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner
from agents.extensions.memory import AdvancedSQLiteSession
from agents.result import RunResult
from agents.testing import ModelStep, ScriptedModel, assistant_message
from agents.usage import Usage
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from sessionstore import SessionStore, SQLSession
from sessionstore.adapters.agents_sdk import input_filter
from sessionstore.compaction import CompactionConfig, CompactionManager


def _usage(inputs: int, cached: int, outputs: int, reasoning: int) -> Usage:
    return Usage(
        requests=1,
        input_tokens=inputs,
        input_tokens_details=InputTokensDetails(cached_tokens=cached, cache_write_tokens=0),
        output_tokens=outputs,
        output_tokens_details=OutputTokensDetails(reasoning_tokens=reasoning),
        total_tokens=inputs + outputs,
    )


def _agent(*answers: tuple[str, Usage]) -> Agent[Any]:
    steps = [ModelStep(output=[assistant_message(text)], usage=usage) for text, usage in answers]
    return Agent(name="a", instructions="Be brief.", model=ScriptedModel(steps))


def _key_figures(usage: dict[str, Any]) -> tuple[Any, ...]:
    return (
        usage["requests"],
        usage["input_tokens"],
        usage["output_tokens"],
        usage["total_tokens"],
        usage["input_tokens_details"]["cached_tokens"],
        usage["output_tokens_details"]["reasoning_tokens"],
    )


async def test_store_run_usage_after_a_recorded_run_stores_nothing_twice(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        manager = CompactionManager(CompactionConfig(store=store))
        config = RunConfig(call_model_input_filter=input_filter(manager))
        session = SQLSession("u", store)
        agent = _agent(("one", _usage(100, 10, 20, 5)), ("two", _usage(200, 50, 30, 0)))
        for prompt in ("first", "second"):
            result = await Runner.run(agent, prompt, session=session, run_config=config)
            await session.store_run_usage(result)  # what an SDK program does after each run
        assert await session.get_session_usage() == {
            "requests": 2,
            "input_tokens": 300,
            "output_tokens": 50,
            "total_tokens": 350,
            "total_turns": 2,
        }
        assert len(await store.model_calls("u")) == 2
        turn_2 = await session.get_turn_usage(2)
        assert isinstance(turn_2, dict) and _key_figures(turn_2) == (1, 200, 30, 230, 50, 0)


async def test_usage_the_session_never_saw_lands_in_the_current_turn_as_in_the_sdk(
    db_url: str, tmp_path: Path
) -> None:
    """A run without the session (its items saved by hand): store_run_usage stores the
    result's usage against the current turn; the getters answer what the SDK's answer."""
    sdk = AdvancedSQLiteSession(
        session_id="u", db_path=str(tmp_path / "advanced.db"), create_tables=True
    )
    agent = _agent(("one", _usage(100, 10, 20, 5)), ("two", _usage(200, 50, 30, 7)))
    results: list[RunResult] = [await Runner.run(agent, p) for p in ("first", "second")]
    try:
        async with SessionStore(db_url, create_tables=True) as store:
            ours = SQLSession("u", store)
            for session in (sdk, ours):
                for prompt, result in zip(("first", "second"), results, strict=True):
                    await session.add_items([{"role": "user", "content": prompt}])
                    await session.store_run_usage(result)
            assert await ours.get_session_usage() == await sdk.get_session_usage()
            ours_turns = await ours.get_turn_usage()
            sdk_turns = await sdk.get_turn_usage()
            assert isinstance(ours_turns, list) and isinstance(sdk_turns, list)
            assert [(t["user_turn_number"], *_key_figures(t)) for t in ours_turns] == [
                (t["user_turn_number"], *_key_figures(t)) for t in sdk_turns
            ]
            assert [t["user_turn_number"] for t in ours_turns] == [1, 2]
            turn_1 = await ours.get_turn_usage(1)
            assert isinstance(turn_1, dict) and _key_figures(turn_1) == (1, 100, 20, 120, 10, 5)
            sdk_turn_1 = await sdk.get_turn_usage(1)
            assert isinstance(sdk_turn_1, dict) and set(turn_1) == set(sdk_turn_1)
    finally:
        sdk.close()


async def test_the_same_result_stored_twice_counts_once_as_in_the_sdk(
    db_url: str, tmp_path: Path
) -> None:
    """The SDK sets a turn's usage: storing a result again (a retry, a second hook) changes
    nothing."""
    sdk = AdvancedSQLiteSession(
        session_id="u", db_path=str(tmp_path / "advanced.db"), create_tables=True
    )
    first = await Runner.run(_agent(("one", _usage(100, 10, 20, 5))), "first")
    try:
        async with SessionStore(db_url, create_tables=True) as store:
            ours = SQLSession("u", store)
            for session in (sdk, ours):
                await session.add_items([{"role": "user", "content": "first"}])
                await session.store_run_usage(first)
                await session.store_run_usage(first)
            assert await ours.get_session_usage() == await sdk.get_session_usage()
            turn = await ours.get_turn_usage(1)
            assert isinstance(turn, dict) and _key_figures(turn) == (1, 100, 20, 120, 10, 5)
            assert len(await store.model_calls("u")) == 1
    finally:
        sdk.close()


async def test_a_result_of_several_requests_keeps_the_sdk_totals(db_url: str) -> None:
    """Usage summed by hand (no per-request entries): every total still matches."""
    usage = Usage(
        requests=2,
        input_tokens=75,
        input_tokens_details=InputTokensDetails(cached_tokens=20, cache_write_tokens=0),
        output_tokens=45,
        output_tokens_details=OutputTokensDetails(reasoning_tokens=15),
        total_tokens=120,
    )
    result = await Runner.run(_agent(("x", _usage(1, 0, 1, 0))), "hi")
    result.context_wrapper.usage = usage
    async with SessionStore(db_url, create_tables=True) as store:
        session = SQLSession("u", store)
        await session.add_items([{"role": "user", "content": "hi"}])
        await session.store_run_usage(result)
        turn = await session.get_turn_usage(1)
        assert isinstance(turn, dict) and _key_figures(turn) == (2, 75, 45, 120, 20, 15)


async def test_session_usage_sums_every_branch_or_one(db_url: str) -> None:
    agent = _agent(("one", _usage(100, 0, 10, 0)), ("two", _usage(40, 0, 4, 0)))
    main_run, branch_run = [await Runner.run(agent, p) for p in ("a", "b")]
    async with SessionStore(db_url, create_tables=True) as store:
        session = SQLSession("u", store)
        await session.add_items([{"role": "user", "content": "a"}])
        await session.store_run_usage(main_run)
        await session.create_branch_from_turn(1, "other")
        await session.add_items([{"role": "user", "content": "b"}])
        await session.store_run_usage(branch_run)
        every = await session.get_session_usage()
        assert every is not None and (every["requests"], every["total_tokens"]) == (2, 154)
        main = await session.get_session_usage("main")
        assert main is not None and (main["requests"], main["total_tokens"]) == (1, 110)
        other = await session.get_session_usage("other")
        assert other is not None and (other["requests"], other["total_tokens"]) == (1, 44)
        on_main = await session.get_turn_usage(1, "main")
        on_branch = await session.get_turn_usage(1)  # the current branch: "other"
        assert isinstance(on_main, dict) and on_main["total_tokens"] == 110
        assert isinstance(on_branch, dict) and on_branch["total_tokens"] == 44
        assert await session.get_session_usage("no-such-branch") is None
        assert await SQLSession("empty", store).get_session_usage() is None
