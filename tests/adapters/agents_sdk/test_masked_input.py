"""Masking in real Agents SDK runs: the model is sent placeholders, the session keeps the
originals, the call's record describes what was sent, and summaries run only when needed."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import sqlalchemy as sa
from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from sessionstore import SessionStore, SQLSession
from sessionstore._items import input_sha256
from sessionstore.adapters.agents_sdk import input_filter
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.histories import words
from tests.support.masking import PLACEHOLDER_START, is_placeholder, masking_policy

TURNS = 6


@function_tool
def read_file(path: str) -> str:
    """Return a (long) file body."""
    return f"contents of {path}: " + words(random.Random(path), 400)


def script(turns: range) -> list[Any]:
    """Each turn: the model reads a file, then answers."""
    steps: list[Any] = []
    for n in turns:
        steps.append([function_call("read_file", {"path": f"src/m{n}.py"}, call_id=f"call_{n}")])
        steps.append([assistant_message(f"Reviewed src/m{n}.py.")])
    return steps


async def run_turns(
    store: SessionStore, policy: CompactionPolicy, window: int, turns: int = TURNS
) -> tuple[ScriptedModel, SQLSession, CompactionManager]:
    manager = CompactionManager(
        CompactionConfig(max_context_tokens=window, policy=policy, store=store)
    )
    model = ScriptedModel(script(range(turns)))
    agent = Agent(name="coder", instructions="Review files.", model=model, tools=[read_file])
    session = SQLSession("s", store, manager=manager)
    config = RunConfig(call_model_input_filter=input_filter(manager))
    for n in range(turns):
        await Runner.run(agent, f"Review src/m{n}.py", session=session, run_config=config)
    model.assert_complete()
    return model, session, manager


async def events(store: SessionStore, name: str) -> list[dict[str, Any]]:
    async with store.engine.connect() as conn:
        query = sa.text("SELECT payload FROM events WHERE event = :name ORDER BY id")
        rows = await conn.execute(query, {"name": name})
        return [p if isinstance(p, dict) else json.loads(p) for (p,) in rows]


async def test_the_model_gets_placeholders_while_the_session_keeps_the_originals(
    db_url: str,
) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        model, session, _ = await run_turns(store, masking_policy(), window=100_000)
        last = model.calls[-1].input
        masked = [item for item in last if is_placeholder(item)]
        # Turns 0..3 are older than the two recent turns: their outputs were masked.
        assert [item["call_id"] for item in masked] == ["call_0", "call_1", "call_2", "call_3"]
        assert all(item["type"] == "function_call_output" for item in masked)
        rows = {row.call_id: row for row in await store.history("s") if row.call_id}
        for item in masked:
            seq = rows[item["call_id"]].seq
            assert f"--seq {seq}..{seq}" in item["output"]
        stored: list[dict[str, Any]] = [dict(item) for item in await session.get_items()]
        outputs = [item for item in stored if item.get("type") == "function_call_output"]
        assert len(outputs) == TURNS
        assert not any(PLACEHOLDER_START in str(item) for item in stored)
        assert all(item["output"].startswith("contents of src/") for item in outputs)

        calls = await store.model_calls("s")
        assert len(calls) == len(model.calls)
        assert calls[-1].input_sha256 == input_sha256(last)  # the digest of what was sent
        stored_total = await store.context_tokens("s")
        estimate = calls[-1].input_tokens_est
        assert estimate is not None and estimate < stored_total  # it counts the masked input
        reports = await events(store, "compact.masked")
        assert reports[-1]["outputs"] == 4 and reports[-1]["tokens_freed"] > 0
        breakdown = (await events(store, "compact.token_estimate"))[-1]["breakdown"]
        assert breakdown["masked"] == reports[-1]["tokens_freed"]
        assert breakdown["messages"] == estimate  # stored + unsaved - what masking freed


async def test_masking_off_sends_the_stored_outputs(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url, create_tables=True) as store:
        policy = CompactionPolicy(keep_recent_turns=2)
        model, _, _ = await run_turns(store, policy, window=100_000)
        assert not any(is_placeholder(item) for item in model.calls[-1].input)
        assert await events(store, "compact.masked") == []


async def test_summaries_wait_while_masking_keeps_the_input_under_the_trigger(
    sqlite_url: str,
) -> None:
    async with SessionStore(sqlite_url, create_tables=True) as store:
        # A window the unmasked session outgrows: only summaries would keep it in.
        await run_turns(store, CompactionPolicy(keep_recent_turns=2), 4_000)
        plain_info = await store.session_info("s")
        assert plain_info is not None and plain_info.compaction_count >= 1
    async with SessionStore(sqlite_url.replace(".db", "-masked.db"), create_tables=True) as store:
        _, _, manager = await run_turns(store, masking_policy(), 4_000)
        info = await store.session_info("s")
        assert info is not None and info.compaction_count == 0  # masking sufficed
        assert info.context_tokens >= manager.policy.threshold(4_000)  # stored: over
        assert len(await events(store, "compact.masked")) > 0


async def test_summaries_run_when_the_masked_input_is_still_over(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url, create_tables=True) as store:
        await run_turns(store, masking_policy(), window=2_500)
        info = await store.session_info("s")
        assert info is not None and info.compaction_count >= 1
        decisions = await events(store, "compact.trigger_decision")
        assert any(decision["triggered"] for decision in decisions)


async def test_the_sent_prefix_holds_until_a_chunk_of_outputs_crosses(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url, create_tables=True) as store:
        policy = masking_policy(keep_tool_outputs=0)  # masked by turn only
        model, _, _ = await run_turns(store, policy, window=100_000)
        inputs = [call.input for call in model.calls]
        for first, second in zip(inputs[::2], inputs[1::2], strict=True):  # one turn's calls
            assert second[: len(first)] == first
        masked = [sum(map(is_placeholder, sent)) for sent in inputs]
        assert masked == sorted(masked) and masked[-1] == TURNS - 2
        for earlier, later in itertools.pairwise(inputs):
            for before, after in zip(earlier, later, strict=False):
                assert not is_placeholder(before) or after == before  # masked stays masked
