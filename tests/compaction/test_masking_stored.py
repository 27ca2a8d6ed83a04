"""Masking is a view: the stored rows are byte-identical however many calls were masked, and
the loops that mask (the chat adapter, the SDK pre-flight, a turn boundary) cascade to
summaries only when the masked input is still over the trigger."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import sqlalchemy as sa
from agents import Agent
from agents.run_config import CallModelData, ModelInputData
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import SessionStore, SQLSession
from sessionstore.adapters.agents_sdk import input_filter
from sessionstore.adapters.chat import ChatConversation
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.histories import Item
from tests.support.masking import is_placeholder, masking_policy, tool_history, tool_turn

_SNAPSHOT = sa.text(
    "SELECT m.*, CAST(m.payload AS TEXT) AS payload_text FROM messages AS m "
    "WHERE m.session_id = :sid ORDER BY m.seq"
)
_SESSION = sa.text("SELECT * FROM sessions WHERE session_id = :sid")


async def snapshot(store: SessionStore, sid: str) -> list[tuple[Any, ...]]:
    """Every column of the session's rows (the payload's stored text too) and its session row."""
    async with store.engine.connect() as conn:
        rows = [tuple(row) for row in await conn.execute(_SNAPSHOT, {"sid": sid})]
        rows += [tuple(row) for row in await conn.execute(_SESSION, {"sid": sid})]
    return rows


def manager_for(store: SessionStore, policy: CompactionPolicy, window: int) -> CompactionManager:
    """A manager for `window` tokens, with a buffer small enough for small windows."""
    policy = policy.model_copy(update={"hard_cap_buffer": 50})
    return CompactionManager(
        CompactionConfig(max_context_tokens=window, policy=policy, store=store)
    )


async def sdk_call(manager: CompactionManager, session: SQLSession, new: list[Item]) -> list[Any]:
    """One pre-flight as the SDK runs it: the loaded history plus unsaved items, fresh copies."""
    items: list[Any] = copy.deepcopy([*await session.get_items(), *new])
    agent: Agent[Any] = Agent(name="a", instructions="Be brief.")
    data = CallModelData(ModelInputData(input=items, instructions="Be brief."), agent, None)
    sent = await input_filter(manager)(data)
    return list(sent.input)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    turns=st.integers(1, 9),
    calls=st.integers(1, 5),
    clear_at_least=st.sampled_from([0, 500, 5_000]),
    keep=st.integers(0, 2),
)
async def test_stored_rows_are_byte_identical_after_masked_calls(
    db_url: str, turns: int, calls: int, clear_at_least: int, keep: int
) -> None:
    sid = f"mask-{uuid.uuid4().hex[:8]}"
    policy = masking_policy(clear_at_least=clear_at_least, keep_tool_outputs=keep)
    async with SessionStore(db_url, create_tables=True) as store:
        manager = manager_for(store, policy, window=1_000_000)
        await manager.append(sid, tool_history(turns))
        before = await snapshot(store, sid)
        chat = ChatConversation(manager, instructions="Be brief.")
        session = SQLSession(sid, store, manager=manager)
        masked = 0
        for n in range(calls):
            sent_chat = await chat.prepare(sid)
            sent_sdk = await sdk_call(manager, session, tool_turn(100 + n))
            masked += sum(map(is_placeholder, [*sent_chat, *sent_sdk]))
        assert await snapshot(store, sid) == before
        if turns > 2 + keep and clear_at_least == 0:
            assert masked > 0  # the calls were masked: the rows held anyway


async def eight_turns(
    store: SessionStore, policy: CompactionPolicy, session_id: str, shrink: int = 1
) -> tuple[CompactionManager, list[Item]]:
    """Eight tool turns stored through a manager whose window (divided by `shrink`) they
    outgrow stored but fit masked."""
    history = tool_history(8)
    stored = sum(store.estimator.count_item(item) for item in history)
    manager = manager_for(store, policy, int(stored * 1.05) // shrink)
    await manager.append(session_id, history)
    return manager, history


async def test_the_chat_loop_sends_placeholders_and_summarizes_only_when_needed(
    sqlite_url: str,
) -> None:
    async with SessionStore(sqlite_url, create_tables=True) as store:
        manager, history = await eight_turns(store, masking_policy(), "fits")
        sent = await ChatConversation(manager).prepare("fits")
        assert sum(map(is_placeholder, sent)) == 6  # type: ignore[arg-type]
        assert await store.load_context("fits") == history
        info = await store.session_info("fits")
        assert info is not None and info.compaction_count == 0
        assert await manager.maybe_compact("fits") is None  # the turn boundary agrees

        # Over the trigger even masked: the summary runs, then masking applies to what is left.
        small, _ = await eight_turns(store, masking_policy(), "over", shrink=3)
        sent = await ChatConversation(small).prepare("over")
        info = await store.session_info("over")
        assert info is not None and info.compaction_count == 1
        assert len(sent) < len(history)


async def test_a_turn_boundary_without_a_preflight_masks_from_the_stored_rows(
    sqlite_url: str,
) -> None:
    async with SessionStore(sqlite_url, create_tables=True) as store:
        masked, _ = await eight_turns(store, masking_policy(), "a")
        assert await masked.maybe_compact("a") is None  # masking keeps the next input under
        plain, _ = await eight_turns(store, CompactionPolicy(keep_recent_turns=2), "b")
        outcome = await plain.maybe_compact("b")
        assert outcome is not None and outcome.compacted


async def test_the_masked_event_is_redacted_like_every_event(sqlite_url: str) -> None:
    secret = "sk-proj-4f9Qz81LmN0pXw7RtY2vB6cD"
    async with SessionStore(sqlite_url, create_tables=True) as store:
        manager = manager_for(store, masking_policy(), window=1_000_000)
        await manager.append("s", [*tool_turn(0, tool=secret), *tool_history(3)])
        sent = await ChatConversation(manager).prepare("s")
        assert secret in str(sent[2])  # the model is sent the tool's name (a view, unredacted)
        async with store.engine.connect() as conn:
            query = sa.text("SELECT payload FROM events WHERE event = 'compact.masked'")
            payloads = [str(payload) for (payload,) in await conn.execute(query)]
    assert payloads and all(secret not in payload for payload in payloads)
    assert all("REDACTED" in payload for payload in payloads)
