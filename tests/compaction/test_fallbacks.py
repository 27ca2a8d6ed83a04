"""Documented failure modes end to end: the service, the real openai client, a real server.

Each summarizer failure must end in a completed compaction (summary or
prune-only) and a `compact.error` event naming what happened and the fallback.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa

from sessionstore import SessionStore
from sessionstore._errors import CompactionError, CompactionErrorReason
from sessionstore._items import answered_call, calls_in, text_of
from sessionstore.compaction._manager import CompactionManager
from sessionstore.compaction._outcome import CompactionConfig
from sessionstore.compaction._policy import CompactionPolicy
from sessionstore.compaction._summarizers._openai import OpenAISummarizer
from sessionstore.compaction._summarizers._prompts import BUILTIN_STRATEGIES
from tests.support.histories import coding_session, turns
from tests.support.openai_server import (
    OpenAIServer,
    context_length_error,
    length,
    ok,
    refusal,
    sleep,
    status,
    tool_call,
)


def manager_for(
    store: SessionStore, server: OpenAIServer | None = None, *, window: int = 100_000, **policy: Any
) -> CompactionManager:
    summarizer = (
        OpenAISummarizer("summarizer-mini", base_url=server.base_url, timeout=0.5)
        if server is not None
        else None
    )
    return CompactionManager(
        CompactionConfig(
            max_context_tokens=window,
            policy=CompactionPolicy(**{"keep_recent_turns": 2, "keep_tool_io_pairs": 1, **policy}),
            store=store,
            summarizer=summarizer,
        )
    )


async def errors_of(store: SessionStore, session_id: str = "s") -> list[dict[str, Any]]:
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT payload FROM events WHERE session_id = :s AND event = 'compact.error'"),
            {"s": session_id},
        )
        return [p if isinstance(p, dict) else json.loads(p) for (p,) in rows]


def summaries(context: list[dict[str, Any]]) -> list[str]:
    return [text_of(i) for i in context if text_of(i).startswith("<COMPACT-SUMMARY")]


async def test_a_good_reply_becomes_the_summary(
    sqlite_url: str, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(ok("Goal: ship 2.4.0. Decision: Redis counters."))
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store, openai_server)
        await manager.append("s", coding_session(10))
        outcome = await manager.compact("s")
        assert outcome.summary == "Goal: ship 2.4.0. Decision: Redis counters."
        body = openai_server.requests[0].body
        assert body["model"] == "summarizer-mini" and body["temperature"] == 0
        assert body["seed"] == 42 and "tools" not in body
        assert summaries(await store.load_context("s")) == [
            "<COMPACT-SUMMARY v1>\nGoal: ship 2.4.0. Decision: Redis counters."
        ]


async def test_server_error_falls_back_to_pruning_only(
    sqlite_url: str, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(status(500, "upstream exploded"))
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store, openai_server)
        await manager.append("s", coding_session(10))
        before = await store.context_tokens("s")
        outcome = await manager.compact("s")
        assert outcome.compacted and outcome.fallback == "pruning-only" and outcome.summary is None
        assert outcome.tokens_after < before
        assert summaries(await store.load_context("s")) == []
        errors = await errors_of(store)
        assert errors[-1]["fallback"] == "pruning-only" and errors[-1]["status"] == "error"
        assert errors[-1]["error_type"] == "unavailable"
        async with store.engine.connect() as conn:
            status_column = (
                await conn.execute(sa.text("SELECT status, fallback FROM compactions"))
            ).one()
        assert tuple(status_column) == ("pruned_only", "pruning-only")


async def test_a_timeout_falls_back_to_pruning_only(
    sqlite_url: str, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(sleep(2.0))
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store, openai_server)
        await manager.append("s", coding_session(8))
        outcome = await manager.compact("s")
        assert outcome.fallback == "pruning-only"
        assert (await errors_of(store))[-1]["error_type"] == "unavailable"


async def test_too_long_retries_at_half_max_tokens_twice_then_prunes(
    sqlite_url: str, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(length(), length(), length())
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store, openai_server, summary_max_tokens=800)
        await manager.append("s", coding_session(10))
        outcome = await manager.compact("s")
        sent = [request.body["max_tokens"] for request in openai_server.requests]
        assert sent == [800, 400, 200]
        assert outcome.fallback == "pruning-only"
        fallbacks = [e["fallback"] for e in await errors_of(store)]
        assert fallbacks == ["retry max_tokens=400", "retry max_tokens=200", "pruning-only"]


async def test_too_long_then_a_fitting_reply_is_used(
    sqlite_url: str, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(length(), ok("short and sweet"))
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store, openai_server, summary_max_tokens=800)
        await manager.append("s", coding_session(10))
        outcome = await manager.compact("s")
        assert outcome.summary == "short and sweet" and outcome.fallback is None


async def test_refusal_retries_with_brief_then_prunes(
    sqlite_url: str, openai_server: OpenAIServer
) -> None:
    brief_marker = BUILTIN_STRATEGIES["brief"].splitlines()[1]
    openai_server.enqueue(refusal(), ok("brief summary"))
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store, openai_server)
        await manager.append("s", coding_session(10))
        outcome = await manager.compact("s")
        assert (outcome.summary, outcome.strategy) == ("brief summary", "brief")
        system = openai_server.requests[1].body["messages"][0]["content"]
        assert brief_marker in system
        openai_server.enqueue(refusal(), refusal())
        await manager.append("s", coding_session(10, seed=2))
        second = await manager.compact("s")
        assert second.fallback == "pruning-only"
        assert (await errors_of(store))[-1]["error_type"] == "refused"
        # prune-only keeps the state it had: the previous summary is carried, still one
        context = await store.load_context("s")
        assert summaries(context) == ["<COMPACT-SUMMARY v1>\nbrief summary"]


async def test_a_reply_with_tool_calls_is_a_failure(
    sqlite_url: str, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(tool_call("search", {"q": "x"}))
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store, openai_server)
        await manager.append("s", coding_session(8))
        outcome = await manager.compact("s")
        assert outcome.fallback == "pruning-only" and len(openai_server.requests) == 1
        assert (await errors_of(store))[-1]["error_type"] == "tool_calls"


async def test_input_too_large_trims_the_oldest_and_retries(
    sqlite_url: str, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(context_length_error(), ok("fits now"))
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store, openai_server)
        await manager.append("s", coding_session(12))
        outcome = await manager.compact("s")
        assert outcome.summary == "fits now"
        first, second = (r.body["messages"][1]["content"] for r in openai_server.requests)
        assert len(second) < len(first)
        assert second.rstrip()[-200:] == first.rstrip()[-200:]  # the newest items stayed


async def test_a_small_input_window_sends_only_the_newest_units_that_fit(
    sqlite_url: str, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(ok("fits"))
    async with SessionStore(sqlite_url) as store:
        wide = manager_for(store, openai_server)
        await wide.append("s", coding_session(12))
        narrow = manager_for(store, openai_server)
        narrow.summarizer = OpenAISummarizer(
            "summarizer-mini", base_url=openai_server.base_url, timeout=0.5, input_window=600
        )
        outcome = await narrow.compact("s")
        assert outcome.summary == "fits" and len(openai_server.requests) == 1
        sent = openai_server.requests[0].body["messages"][1]["content"]
        assert "step 9 done" in sent  # the newest summarized turn (two recent ones are kept)
        assert "step 0:" not in sent
        async with store.engine.connect() as conn:
            (payload,) = (
                await conn.execute(
                    sa.text(
                        "SELECT payload FROM events "
                        "WHERE event = 'compact.summarizer_input_trimmed'"
                    )
                )
            ).one()
        fields = payload if isinstance(payload, dict) else json.loads(payload)
        assert fields["input_window"] == 600 and fields["units_dropped"] > 0
        assert await errors_of(store) == []


async def test_keep_keys_reach_the_summarizer_and_the_summary(
    sqlite_url: str, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(ok("Goal: ship."))
    async with SessionStore(sqlite_url) as store:
        keys = ("Project: Falcon-7 [billing]",)
        online = manager_for(store, openai_server, keep_keys=keys)
        await online.append("s", coding_session(10))
        await online.compact("s")
        prompt = openai_server.requests[0].body["messages"][1]["content"]
        assert "Project: Falcon-7 [billing]" in prompt
        offline = manager_for(store, keep_keys=keys)
        await offline.append("t", coding_session(10))
        outcome = await offline.compact("t")
        assert outcome.summary is not None and "Project: Falcon-7 [billing]" in outcome.summary


async def test_preflight_events_at_75_and_85_percent(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store, window=10_000, hard_cap_buffer=200)
        messages: list[dict[str, Any]] = []
        while await store.context_tokens("s") < 7_500:
            messages.append({"role": "user", "content": "note " * 150})
            messages = await manager.preflight("s", messages)
        async with store.engine.connect() as conn:
            first = (
                await conn.execute(
                    sa.text(
                        "SELECT triggered, t_est FROM events WHERE event = "
                        "'compact.trigger_decision' ORDER BY id"
                    )
                )
            ).all()
        assert all(not row.triggered for row in first) and first[-1].t_est < 8_500
        for _ in range(50):
            messages.append({"role": "user", "content": "note " * 150})
            messages = await manager.preflight("s", messages)
            info = await store.session_info("s")
            if info is not None and info.compaction_count:
                break
        else:
            raise AssertionError("preflight never crossed the 85% trigger")
        async with store.engine.connect() as conn:
            triggered = (
                await conn.execute(
                    sa.text(
                        "SELECT t_est, max_tokens, payload FROM events WHERE event = "
                        "'compact.trigger_decision' AND triggered"
                    )
                )
            ).one()
        assert triggered.t_est >= 8_500 and triggered.max_tokens == 10_000


async def test_chat_completions_messages_compact_with_pairs_intact(sqlite_url: str) -> None:
    chat: list[dict[str, Any]] = []
    for n in range(12):
        chat += [
            {"role": "user", "content": f"step {n}: list the files in dir{n}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"t{n}",
                        "type": "function",
                        "function": {"name": "ls", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"t{n}", "content": f"a{n}.txt b{n}.txt " * 30},
            {"role": "assistant", "content": f"dir{n} holds a{n}.txt and b{n}.txt"},
        ]
    async with SessionStore(sqlite_url) as store:
        manager = manager_for(store)
        result = await manager.manual_compact("chat", chat)
        assert len(result) < len(chat) and summaries(result)
        for index, item in enumerate(result):
            answered = answered_call(item)
            if answered:
                assert any(answered in calls_in(prior) for prior in result[:index])
            for made in calls_in(item):
                assert any(answered_call(later) == made for later in result[index:])
        rows = {row.call_id: row.tool_name for row in await store.history("chat") if row.call_id}
        assert rows["t3"] == "ls"


async def test_loop_guard_stops_repeated_compactions_that_do_not_help(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url) as store:
        # Protected memory alone sits above the trigger but within the budget:
        # every compaction "succeeds" yet leaves the context above the threshold.
        manager = manager_for(
            store, window=4_000, hard_cap_buffer=0, trigger_pct=0.5, max_consecutive_compactions=2
        )
        big_rule = {"role": "developer", "content": "Rule. " * 1200}  # ~2.4k: above 50%
        await manager.append("s", [big_rule])
        for round_number in range(2):
            await manager.append("s", turns(4, seed=round_number, size=5))
            await manager.compact("s", trigger="threshold")
        await manager.append("s", turns(4, seed=9, size=5))
        with pytest.raises(CompactionError) as caught:
            await manager.compact("s", trigger="threshold")
        assert caught.value.reason is CompactionErrorReason.COMPACTION_LOOP
