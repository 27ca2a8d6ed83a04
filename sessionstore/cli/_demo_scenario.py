"""The `sessionstore demo` scenario: a real Agents SDK run, a restart, the same context.

It needs no API key: the SDK's ScriptedModel plays the model, so what the demo
shows (rows written, context reloaded by a fresh store, token totals) is exactly
what a real run stores.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

from .._items import text_of
from .._rows import StoredRow
from .._schema import SUMMARY_START
from .._store import SessionStore
from ..adapters.agents_sdk import SQLSession, input_filter

DEMO_SESSION = "demo"
LONG_SESSION = "demo-long"
DEMO_URL = "sqlite:///sessionstore-demo.db"  # the demo's own file, never the user's database
# Sessions the demo made carry this mark; it never touches a session without it.
DEMO_MARK = {"created_by": "sessionstore demo"}
PROMPTS = (
    "Hi! I'm planning a trip to Paris next week.",
    "What's the weather going to be like there?",
    "And in Lyon?",
    "Thanks. Summarize what you told me.",
)


@function_tool
def get_weather(city: str) -> str:
    """Look up the forecast for a city (a fixed answer, for the demo)."""
    forecasts = {"Paris": "18C, light rain on Tuesday", "Lyon": "22C and sunny all week"}
    return forecasts.get(city, "no forecast available")


def _script() -> list[Any]:
    return [
        [assistant_message("Lovely! Ask me anything about the trip.")],
        [function_call("get_weather", {"city": "Paris"}, call_id="call_paris")],
        [assistant_message("Paris: 18C with light rain on Tuesday. Pack an umbrella.")],
        [function_call("get_weather", {"city": "Lyon"}, call_id="call_lyon")],
        [assistant_message("Lyon: 22C and sunny all week.")],
        [assistant_message("Paris is 18C with rain on Tuesday; Lyon is 22C and sunny.")],
    ]


@dataclass(frozen=True)
class DemoResult:
    """What the demo observed, for printing and for tests."""

    answers: list[str]
    rows: list[StoredRow]
    tokens_before_restart: int
    tokens_after_restart: int
    context_before_restart: list[dict[str, Any]]
    context_after_restart: list[dict[str, Any]]
    tool_calls: list[tuple[str, int]]


# What an analyst would ask of the history: which tools did this session call, how often?
TOOLS_QUERY = """
SELECT tool_name, count(*) AS calls
FROM messages
WHERE session_id = :session_id AND kind = 'item' AND item_type = 'function_call'
GROUP BY tool_name ORDER BY calls DESC
"""


async def foreign_sessions(url: str) -> list[str]:
    """The demo's session ids that exist in `url` but were not made by the demo."""
    async with SessionStore(url, create_tables=True) as store:
        found = [
            (session_id, await store.session_metadata(session_id))
            for session_id in (DEMO_SESSION, LONG_SESSION)
        ]
    return [session_id for session_id, meta in found if meta is not None and not _ours(meta)]


def _ours(meta: dict[str, Any]) -> bool:
    return all(meta.get(key) == value for key, value in DEMO_MARK.items())


async def _fresh(store: SessionStore, session_id: str) -> None:
    """Start the session's active context afresh (earlier runs stay in its history)."""
    meta = await store.session_metadata(session_id)
    if meta is not None and not _ours(meta):  # checked before; a race with another writer
        raise ValueError(f"session {session_id!r} was not created by the demo; not touching it")
    await store.clear(session_id)


async def _mark(store: SessionStore, session_id: str) -> None:
    """Mark the session as the demo's (once its first turn created it)."""
    await store.merge_session_metadata(session_id, DEMO_MARK)


async def run_demo(url: str = DEMO_URL, session_id: str = DEMO_SESSION) -> DemoResult:
    """Run the conversation, close the store, reopen it and reload the context."""
    if not os.environ.get("OPENAI_API_KEY"):
        set_tracing_disabled(True)  # nowhere to send traces; stay quiet about it
    model = ScriptedModel(_script())
    agent = Agent(
        name="travel-assistant",
        instructions="You help plan trips. Be brief.",
        model=model,
        tools=[get_weather],
    )
    async with SessionStore(url, create_tables=True) as store:
        await _fresh(store, session_id)
        session = SQLSession(session_id, store)
        answers = []
        for prompt in PROMPTS:
            result = await Runner.run(agent, prompt, session=session)
            answers.append(str(result.final_output))
            await _mark(store, session_id)
        context_before = await store.load_context(session_id)
        tokens_before = await store.context_tokens(session_id)
        rows = await store.context_rows(session_id)
    async with SessionStore(url) as reopened:  # as after a process restart
        context_after = await reopened.load_context(session_id)
        tokens_after = await reopened.context_tokens(session_id)
        async with reopened.engine.connect() as conn:
            found = await conn.execute(sa.text(TOOLS_QUERY), {"session_id": session_id})
            tool_calls = [(str(name), int(calls)) for name, calls in found]
    return DemoResult(
        answers, rows, tokens_before, tokens_after, context_before, context_after, tool_calls
    )


# ----------------------------------------------------------- the long session

SERVICES = ("billing", "search", "auth", "checkout", "notifications", "reports")


def _log_lines(step: int, service: str, lines: int = 28) -> str:
    """A deterministic, realistic-looking tool output (~30 tokens a line)."""
    rows = [
        f"2026-11-{1 + step % 28:02d}T10:{n % 60:02d}:00Z {service} worker-{n % 7} "
        f"request_id=req-{step:04d}-{n:03d} latency_ms={40 + (step * 37 + n * 11) % 400} "
        f"status={'500' if (step + n) % 17 == 0 else '200'} path=/api/v2/{service}/items"
        for n in range(lines)
    ]
    return "\n".join(rows)


def _answer(step: int, service: str) -> str:
    p99 = 120 + (step * 53) % 380
    return (
        f"Step {step}: {service} p99 latency is {p99}ms on branch feat/{service}-{step}. "
        f"Decision: {'roll back' if p99 > 400 else 'keep'} release r{step} because the error "
        f"budget is {'exhausted' if p99 > 400 else 'healthy'}. Next: open ticket OPS-{1000 + step} "
        f"and re-check {service} after the cache warm-up. "
        + " ".join(f"Observation {k}: worker-{k} stable at {p99 - k * 3}ms." for k in range(12))
    )


# Everything the conversation ever held (appended items), since the demo started.
TRAFFIC_QUERY = """
SELECT coalesce(sum(tokens), 0) FROM messages
WHERE session_id = :session_id AND kind = 'item' AND seq >= :start
"""
COMPACTIONS_QUERY = """
SELECT version, trigger, tokens_before, tokens_after, summary_tokens, duration_ms
FROM compactions WHERE session_id = :session_id AND context_start_seq >= :start ORDER BY version
"""


async def _scalar(store: SessionStore, sql: str, **params: Any) -> int:
    async with store.engine.connect() as conn:
        return int((await conn.execute(sa.text(sql), params)).scalar_one())


async def _compaction_rows(store: SessionStore, session_id: str, start: int) -> list[CompactionRow]:
    async with store.engine.connect() as conn:
        found = await conn.execute(
            sa.text(COMPACTIONS_QUERY), {"session_id": session_id, "start": start}
        )
        return [CompactionRow(*row) for row in found]


@dataclass(frozen=True)
class CompactionRow:
    """One line of the demo's compaction report."""

    version: int
    trigger: str
    tokens_before: int
    tokens_after: int
    summary_tokens: int | None
    duration_ms: float | None


@dataclass(frozen=True)
class LongSessionReport:
    """What the long session showed."""

    window: int
    turns: int
    traffic_tokens: int
    largest_model_input: int
    final_context_tokens: int
    final_context_items: int
    compactions: list[CompactionRow]
    summary_preview: str


async def run_long_session(
    url: str = DEMO_URL,
    *,
    window: int = 128_000,
    factor: int = 3,
    session_id: str = LONG_SESSION,
    progress: Callable[[int, int], None] | None = None,
) -> LongSessionReport:
    """Drive the real Runner with pre-flight compaction until `factor` windows went through
    (`progress(tokens_so_far, target)` after each turn)."""
    from ..compaction._manager import CompactionManager
    from ..compaction._outcome import CompactionConfig

    if not os.environ.get("OPENAI_API_KEY"):
        set_tracing_disabled(True)
    sizes: list[int] = []
    async with SessionStore(url, create_tables=True) as store:
        estimator = store.estimator
        await _fresh(store, session_id)
        before = await store.session_info(session_id)
        start = before.last_seq + 1 if before else 1
        manager = CompactionManager(CompactionConfig(max_context_tokens=window, store=store))

        counted: dict[str, int] = {}  # each call resends the context: count an item once

        def size_of(item: Any) -> int:
            key = json.dumps(item, sort_keys=True, default=str)
            if key not in counted:
                counted[key] = estimator.count_item(item)
            return counted[key]

        def measured(output: Any) -> Any:
            def respond(call: Any) -> Any:
                items = call.input if isinstance(call.input, list) else []
                sizes.append(sum(size_of(item) for item in items))
                return output

            return respond

        @function_tool
        def read_logs(service: str, step: int) -> str:
            """Fetch recent logs for a service."""
            return _log_lines(step, service)

        model = ScriptedModel([])
        agent = Agent(
            name="sre-assistant",
            instructions="Investigate latency step by step; keep decisions explicit.",
            model=model,
            tools=[read_logs],
        )
        session = SQLSession(session_id, store, manager=manager)
        config = RunConfig(call_model_input_filter=input_filter(manager))
        traffic, step = 0, 0
        while traffic < factor * window:
            service = SERVICES[step % len(SERVICES)]
            model.extend(
                [
                    ModelStep.respond(
                        measured(
                            [
                                function_call(
                                    "read_logs",
                                    {"service": service, "step": step},
                                    call_id=f"call_{step}",
                                )
                            ]
                        )
                    ),
                    ModelStep.respond(measured([assistant_message(_answer(step, service))])),
                ]
            )
            prompt = f"Step {step}: investigate {service} latency on branch feat/{service}-{step}."
            await Runner.run(agent, prompt, session=session, run_config=config)
            if step == 0:
                await _mark(store, session_id)
            step += 1
            traffic = await _scalar(store, TRAFFIC_QUERY, session_id=session_id, start=start)
            if progress is not None:
                progress(traffic, factor * window)
        report_rows = await _compaction_rows(store, session_id, start)
        context = await store.load_context(session_id)
        info = await store.session_info(session_id)
        assert info is not None
        summary = next((text_of(i) for i in context if text_of(i).startswith(SUMMARY_START)), "")
    return LongSessionReport(
        window=window,
        turns=step,
        traffic_tokens=traffic,
        largest_model_input=max(sizes, default=0),
        final_context_tokens=info.context_tokens,
        final_context_items=info.context_items,
        compactions=report_rows,
        summary_preview="\n".join(summary.splitlines()[:12]),
    )
