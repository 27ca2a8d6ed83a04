"""End to end with the real Agents SDK Runner: pre-flight compaction, turn boundaries, recovery.

The scripted model behaves like a provider with a context window: every call
whose input (instructions, items) exceeds the window raises a context-length
error, so "no context-limit error" is checked by the model itself.
"""

from __future__ import annotations

import asyncio
import copy
import json
import sqlite3
import sys
import textwrap
from typing import Any

import pytest
import sqlalchemy as sa
from agents import Agent, RunConfig, Runner, function_tool
from agents.run_config import CallModelData, ModelInputData
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.testing.model import ModelCall

from sessionstore import SessionStore, SessionStoreError, SQLSession
from sessionstore._items import text_of
from sessionstore._tokens import estimator_for_model
from sessionstore.adapters.agents_sdk import input_filter, run_with_overflow_recovery
from sessionstore.compaction._manager import CompactionManager
from sessionstore.compaction._outcome import CompactionConfig
from sessionstore.compaction._policy import CompactionPolicy
from tests.support.database import write_lock_held
from tests.support.histories import turns, user, words
from tests.support.stored_events import events_of

ESTIMATOR = estimator_for_model("gpt-4o")
WINDOW = 6_000


class ContextLengthExceeded(Exception):
    """What a provider raises when the prompt does not fit."""


@function_tool
def read_file(path: str) -> str:
    """Return a (long) file body."""
    import random

    return f"contents of {path}: " + words(random.Random(path), 450)


class WindowedScript:
    """Scripted turns (a tool call, then an answer) on a model with a real window."""

    def __init__(self, window: int = WINDOW) -> None:
        self.window = window
        self.sizes: list[int] = []

    def measure(self, call: ModelCall) -> int:
        items = (
            call.input
            if isinstance(call.input, list)
            else [{"role": "user", "content": call.input}]
        )
        tokens = sum(ESTIMATOR.count_item(item) for item in items)
        if call.system_instructions:
            tokens += ESTIMATOR.count_text(call.system_instructions) + 3
        if tokens > self.window:
            raise ContextLengthExceeded(
                f"This model's maximum context length is {self.window} tokens, "
                f"however you requested {tokens} tokens"
            )
        self.sizes.append(tokens)
        return tokens

    def turn(self, n: int) -> list[ModelStep]:
        def call_tool(call: ModelCall) -> Any:
            self.measure(call)
            return [function_call("read_file", {"path": f"src/m{n}.py"}, call_id=f"call_{n}")]

        def answer(call: ModelCall) -> Any:
            self.measure(call)
            return [assistant_message(f"Turn {n}: reviewed src/m{n}.py. " + words_for(n))]

        return [ModelStep.respond(call_tool), ModelStep.respond(answer)]


def words_for(n: int) -> str:
    import random

    return words(random.Random(n), 120)


def manager_for(store: SessionStore, **policy: Any) -> CompactionManager:
    return CompactionManager(
        CompactionConfig(
            max_context_tokens=WINDOW,
            policy=CompactionPolicy(
                **{
                    "hard_cap_buffer": 500,
                    "keep_recent_turns": 2,
                    "keep_tool_io_pairs": 2,
                    **policy,
                }
            ),
            store=store,
        )
    )


@pytest.mark.slow  # a long session: left out of the everyday subset
async def test_a_session_of_three_windows_never_overflows(db_url: str) -> None:
    script = WindowedScript()
    model = ScriptedModel([])
    agent = Agent(name="coder", instructions="Review files.", model=model, tools=[read_file])
    async with SessionStore(db_url, create_tables=True) as store:
        manager = manager_for(store)
        session = SQLSession("long", store, manager=manager)
        config = RunConfig(call_model_input_filter=input_filter(manager))
        traffic = 0
        n = 0
        while traffic < 3 * WINDOW:  # everything the conversation ever held: 3 windows' worth
            model.extend(script.turn(n))
            result = await Runner.run(
                agent, f"Review src/m{n}.py please.", session=session, run_config=config
            )
            assert str(result.final_output).startswith(f"Turn {n}:")
            history = await store.history("long")
            traffic = sum(row.tokens for row in history if row.kind == "item")
            n += 1
            assert n < 100
        model.assert_complete()
        info = await store.session_info("long")
        assert info is not None and info.compaction_count >= 3
        assert max(script.sizes) <= WINDOW
        assert info.context_tokens <= manager.policy.budget(WINDOW)
        context = await store.load_context("long")
        assert sum(text_of(i).startswith("<COMPACT-SUMMARY") for i in context) == 1

    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        textwrap.dedent(
            f"""
            import asyncio, json
            from sessionstore import SessionStore
            async def main():
                async with SessionStore({db_url!r}) as store:
                    print(json.dumps(await store.load_context("long")))
            asyncio.run(main())
            """
        ),
        stdout=asyncio.subprocess.PIPE,
    )
    stdout, _ = await asyncio.wait_for(child.communicate(), 60)
    assert json.loads(stdout) == context


async def test_preflight_counts_instructions_and_tool_schemas(sqlite_url: str) -> None:
    script = WindowedScript()
    model = ScriptedModel(script.turn(0))
    agent = Agent(
        name="coder", instructions="Review files carefully.", model=model, tools=[read_file]
    )
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store)
        session = SQLSession("s", store, manager=manager)
        await Runner.run(
            agent,
            "Review src/m0.py",
            session=session,
            run_config=RunConfig(call_model_input_filter=input_filter(manager)),
        )
        async with store.engine.connect() as conn:
            payloads = [
                json.loads(p)
                for (p,) in await conn.execute(
                    sa.text("SELECT payload FROM events WHERE event = 'compact.token_estimate'")
                )
            ]
    assert len(payloads) == 2  # one per model call, tool loop included
    breakdown = payloads[-1]["breakdown"]
    assert breakdown["system"] > 0 and breakdown["tools_schema"] > 0
    assert payloads[-1]["t_est"] == sum(breakdown.values())


async def test_turn_boundary_compaction_without_a_filter(sqlite_url: str) -> None:
    script = WindowedScript(window=10**9)  # no limit: only the session compacts
    model = ScriptedModel([step for n in range(12) for step in script.turn(n)])
    agent = Agent(name="coder", instructions="Review files.", model=model, tools=[read_file])
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store)
        session = SQLSession("s", manager=manager)
        for n in range(12):
            await Runner.run(agent, f"Review src/m{n}.py", session=session)
        info = await store.session_info("s")
        assert info is not None and info.compaction_count >= 1
        assert info.context_tokens < manager.policy.threshold(WINDOW)


async def test_overflow_error_compacts_and_retries_without_duplicating_input(
    sqlite_url: str,
) -> None:
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store)
        await store.append("s", turns(10, size=40))
        attempts = []

        def overflow_then_answer(call: ModelCall) -> Any:
            attempts.append(len(call.input))
            if len(attempts) == 1:
                raise ContextLengthExceeded("This model's maximum context length is 6000 tokens")
            return [assistant_message("recovered")]

        model = ScriptedModel([ModelStep.respond(overflow_then_answer)] * 2)
        agent = Agent(name="a", instructions="Be brief.", model=model)
        session = SQLSession("s", store, manager=manager)
        result = await run_with_overflow_recovery(
            agent, "what now?", session=session, manager=manager
        )
        assert str(result.final_output) == "recovered"
        assert attempts[1] < attempts[0]  # the retry saw the compacted context
        context = await store.load_context("s")
        assert [text_of(i) for i in context].count("what now?") == 1
        async with store.engine.connect() as conn:
            trigger = (
                await conn.execute(sa.text("SELECT trigger FROM compactions WHERE session_id='s'"))
            ).scalar_one()
        assert trigger == "overflow"


async def test_non_overflow_errors_are_not_retried(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store)

        def broken(call: ModelCall) -> Any:
            raise RuntimeError("provider is down")

        agent = Agent(name="a", model=ScriptedModel([ModelStep.respond(broken)]))
        session = SQLSession("s", store, manager=manager)
        try:
            await run_with_overflow_recovery(agent, "hi", session=session, manager=manager)
        except RuntimeError as exc:
            assert "provider is down" in str(exc)
        else:
            raise AssertionError("a non-overflow error must propagate")
        assert (await store.session_info("s")).compaction_count == 0  # type: ignore[union-attr]


# --- a call need not wait for its record ---------------------------------------------------


async def _one_call(manager: CompactionManager, session: SQLSession) -> None:
    """A pre-flight as the SDK runs it, on the run `session.get_items` started."""
    items: list[Any] = copy.deepcopy(await session.get_items())
    agent: Agent[Any] = Agent(name="a", instructions="Be brief.")
    await input_filter(manager)(
        CallModelData(ModelInputData(input=items, instructions="Be brief."), agent, None)
    )


async def test_a_call_goes_out_while_its_record_is_written_and_the_turn_waits_for_it(
    db_url: str,
) -> None:
    """Once the store knows the session's total, an idle pre-flight returns without waiting
    for its record (the model call goes out meanwhile); the run's next save waits for it, so
    the record names the context that was sent, not the items saved after."""
    async with SessionStore(db_url, create_tables=True, sqlite_busy_timeout_ms=30_000) as store:
        manager = CompactionManager(CompactionConfig(store=store))
        session = SQLSession("u", store)
        await session.add_items([{"role": "user", "content": "hello"}])
        await _one_call(manager, session)  # the first: decided from a read, recorded at once
        assert len(await store.model_calls("u")) == 1
        async with write_lock_held(store, "u"):
            await asyncio.wait_for(_one_call(manager, session), 10)  # not held up by the lock
            assert len(await store.model_calls("u")) == 1  # its record is still waiting
            reply: Any = {"role": "assistant", "content": "hi"}
            saving = asyncio.ensure_future(session.add_items([reply]))
            await asyncio.sleep(0.3)
            assert not saving.done()  # the save waits for the record
        await saving
        calls = await store.model_calls("u")
        assert [call.call for call in calls] == [1, 2]
        assert calls[1].context_to_seq == 1  # sent before the reply was stored
        assert [item["role"] for item in await store.load_context("u")] == ["user", "assistant"]


async def test_a_record_written_while_its_call_went_out_fails_the_next_save_once(
    sqlite_url: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """The record's error is not lost: it is printed when it happens and raised by the run's
    next save (whose items are then not stored; the retry stores them)."""
    async with SessionStore(sqlite_url, create_tables=True) as store:
        manager = CompactionManager(CompactionConfig(store=store))
        session = SQLSession("u", store)
        await session.add_items([{"role": "user", "content": "hello"}])
        await _one_call(manager, session)
        raw = sqlite3.connect(sqlite_url.split("///", 1)[1], isolation_level=None)
        try:
            raw.execute(
                "CREATE TRIGGER refuse_calls BEFORE INSERT ON model_calls "
                "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
            )
            await _one_call(manager, session)  # returns: the record fails meanwhile
            with pytest.raises(SessionStoreError, match="refused by the test"):
                await session.add_items([{"role": "assistant", "content": "hi"}])
            raw.execute("DROP TRIGGER refuse_calls")
        finally:
            raw.close()
        await session.add_items([{"role": "assistant", "content": "hi"}])
        assert [item["role"] for item in await store.load_context("u")] == ["user", "assistant"]
        assert [call.call for call in await store.model_calls("u")] == [1]
    assert "[sessionstore] recording a model call failed" in capfd.readouterr().err


async def test_a_total_another_process_moved_is_recorded_and_the_next_call_compacts(
    db_url: str,
) -> None:
    """The call decided on the total this store last saw goes out; its record, written from
    the stored total, says what that total was (over the trigger), and the next pre-flight,
    knowing it now, compacts before its call. A compaction is one call late, never missed."""
    async with (
        SessionStore(db_url, create_tables=True) as store,
        SessionStore(db_url) as other_process,
    ):
        manager = manager_for(store)
        session = SQLSession("u", store)
        await session.add_items([{"role": "user", "content": "hello"}])
        await _one_call(manager, session)
        await other_process.append("u", [user(words_for(n)) for n in range(60)])
        stored = await store.context_tokens("u")
        assert stored > WINDOW
        await _one_call(manager, session)  # decided on the old total: no compaction
        await session.add_items([{"role": "assistant", "content": "ok"}])  # the record waited
        info = await session.store.session_info("u")
        assert info is not None and info.compaction_count == 0
        estimates = [
            event["t_est"] for event in await events_of(store, "u", "compact.token_estimate")
        ]
        assert len(estimates) == 2 and estimates[1] >= stored
        await _one_call(manager, session)
        info = await session.store.session_info("u")
        assert info is not None and info.compaction_count == 1
