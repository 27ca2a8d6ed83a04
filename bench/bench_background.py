"""Background compaction: the latency a compaction adds to the model call that hits the trigger.

    python bench/bench_background.py            # SQLite and PostgreSQL, 20 sessions each
    python bench/bench_background.py --quick    # 6 sessions, SQLite only

An agent-like loop through the real Agents SDK adapter, for N sessions at once: load the
session (`SQLSession.get_items`, as a run starts), run the pre-flight
(`call_model_input_filter`) on the history plus the new user message, "call the model"
(a sleep), store the turn (`add_items`). The summarizer is the extractive one behind a 2 s
sleep, the size of an LLM summarization call. Session i starts i % 6 turns past half its
trigger (so the sessions do not all compact on the same turn, and all start under
`prepare_at`) and runs until its first compaction;
what is measured is the store's time in the turn that compacted: its pre-flight, and
`add_items`, whose turn-boundary check may compact first. Foreground: the compaction calls
the summarizer there. Background (`policy.background.enabled`): the summary was prepared
from `prepare_at` on, while the model calls ran, and the turn only commits it. Both are
printed side by side, with the ratio, in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from agents import Agent, TResponseInputItem
from agents.run_config import CallModelData, ModelInputData
from scratch_pg import scratch_database
from sqlalchemy.engine import make_url

from sessionstore import SessionStore, SQLSession
from sessionstore.adapters.agents_sdk import input_filter
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from sessionstore.compaction._background_policy import BackgroundPolicy
from sessionstore.compaction._summarizers._extractive import ExtractiveSummarizer
from sessionstore.compaction._summarizers._summarizer import SummaryRequest, SummaryResult

WINDOW = 8_000
WORDS = ("plan", "build", "test", "deploy", "review", "schema", "index", "cache", "latency")


class SleepingSummarizer:
    """The extractive summarizer after a sleep of an LLM call's length, its work on a thread
    of its own (an LLM's runs on its server, not on the caller's event loop)."""

    name = "extractive+sleep"
    input_window: int | None = None

    def __init__(self, inner: ExtractiveSummarizer, seconds: float) -> None:
        self.inner, self.seconds = inner, seconds

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        await asyncio.sleep(self.seconds)
        return await asyncio.to_thread(asyncio.run, self.inner.summarize(request))


def turn(n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """One user message and the assistant's answer (~80 tokens each)."""
    text = " ".join(WORDS[(n * 7 + k) % len(WORDS)] for k in range(60))
    return (
        {"role": "user", "content": f"step {n}: {text}"},
        {"role": "assistant", "content": [{"type": "output_text", "text": f"done {n}: {text}"}]},
    )


@dataclass(frozen=True, slots=True)
class Trigger:
    """One session's compacting turn: the store's time in it, and how many turns it took."""

    latency_ms: float
    turns: int
    usual_ms: float  # the median of the session's turns that did not compact


def manager_for(store: SessionStore, background: bool, summarizer_s: float) -> CompactionManager:
    policy = CompactionPolicy(
        hard_cap_buffer=200,
        keep_recent_turns=2,
        summary_max_tokens=400,  # an LLM summary's size (the default allowance is 2,048)
        background=BackgroundPolicy(enabled=background),
    )
    summarizer = SleepingSummarizer(ExtractiveSummarizer(store.estimator), summarizer_s)
    return CompactionManager(
        CompactionConfig(
            max_context_tokens=WINDOW,
            policy=policy,
            store=store,
            summarizer=summarizer,
            record_idle_decisions=False,
        )
    )


async def run_session(
    manager: CompactionManager, session_id: str, model_s: float, offset: int, max_turns: int = 400
) -> Trigger:
    """Turns until the first compaction; the store's time in that turn (the pre-flight before
    the model call and storing the turn after it, where the turn-boundary check compacts)."""
    store = manager.store
    agent: Agent[Any] = Agent(name="a", instructions="Be brief.")
    preflight = input_filter(manager)
    half = manager.policy.threshold(WINDOW) // 2
    n = 0
    while await store.context_tokens(session_id) < half:  # start at half the trigger...
        await store.append(session_id, list(turn(n)))
        n += 1
    past = [item for k in range(n, n + offset) for item in turn(k)]  # ...and `offset` turns
    if past:
        await store.append(session_id, past)
    n += offset
    session = SQLSession(session_id, store, manager=manager)
    usual: list[float] = []
    for number in range(max_turns):
        asked, answer = turn(n + number)
        history = await session.get_items()
        sent = cast("list[TResponseInputItem]", [*history, asked])
        data = CallModelData(ModelInputData(input=sent, instructions=None), agent, None)
        before = (await store.session_info(session_id)).compaction_count  # type: ignore[union-attr]
        start = time.perf_counter()
        await preflight(data)
        latency = time.perf_counter() - start
        await asyncio.sleep(model_s)  # the model call
        start = time.perf_counter()
        await session.add_items([asked, answer])  # type: ignore[list-item]  # may compact too
        latency = (latency + time.perf_counter() - start) * 1000
        after = (await store.session_info(session_id)).compaction_count  # type: ignore[union-attr]
        if after > before:
            return Trigger(latency, number + 1, statistics.median(usual))
        usual.append(latency)
    raise RuntimeError(f"{session_id} never compacted in {max_turns} turns")


async def trigger_latencies(
    url: str, *, background: bool, sessions: int, summarizer_s: float, model_s: float
) -> tuple[list[Trigger], int]:
    """The compacting turn of each of `sessions` sessions run at once, and how many of
    those compactions committed a prepared summary."""
    async with SessionStore(url, create_tables=True) as store:
        manager = manager_for(store, background, summarizer_s)
        tag = uuid.uuid4().hex[:6]
        ids = [f"{'bg' if background else 'fg'}-{tag}-{i}" for i in range(sessions)]
        found = await asyncio.gather(
            *(run_session(manager, sid, model_s, i % 6) for i, sid in enumerate(ids))
        )
        async with store.engine.connect() as conn:
            import sqlalchemy as sa

            committed = (
                await conn.execute(
                    sa.text(
                        "SELECT count(*) FROM events WHERE event = 'compact.prepared_committed' "
                        "AND session_id LIKE :tag"
                    ),
                    {"tag": f"%-{tag}-%"},
                )
            ).scalar_one()
        return list(found), int(committed)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def bench(url: str, sessions: int, summarizer_s: float, model_s: float) -> None:
    backend = make_url(url).get_backend_name()
    print(
        f"\nlatency the compaction adds to the turn that hits the trigger ({backend}; "
        f"{sessions} sessions at once, summarizer {summarizer_s:.1f} s, model call "
        f"{model_s:.2f} s)",
        flush=True,
    )
    results = {}
    for background in (False, True):
        results[background] = await trigger_latencies(
            url,
            background=background,
            sessions=sessions,
            summarizer_s=summarizer_s,
            model_s=model_s,
        )
    fg = [t.latency_ms for t in results[False][0]]
    bg = [t.latency_ms for t in results[True][0]]
    print(f"  {'':<12}{'foreground':>14}{'background':>14}{'fg/bg':>10}")
    for label, share in (("p50", 0.5), ("p99", 0.99), ("max", 1.0)):
        a, b = percentile(fg, share), percentile(bg, share)
        print(f"  {label:<12}{a:>11.1f} ms{b:>11.1f} ms{a / b:>9.0f}x")
    usual_fg = statistics.median(t.usual_ms for t in results[False][0])
    usual_bg = statistics.median(t.usual_ms for t in results[True][0])
    print(f"  {'usual turn':<12}{usual_fg:>11.1f} ms{usual_bg:>11.1f} ms   (p50, no compaction)")
    turns = statistics.median(t.turns for t in results[True][0])
    print(
        f"  background: {results[True][1]}/{sessions} compactions committed a prepared "
        f"summary (median {turns:.0f} turns to the trigger)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backends", default=None)
    parser.add_argument("--sessions", type=int, default=None)
    parser.add_argument("--summarizer-s", type=float, default=2.0)
    parser.add_argument("--model-s", type=float, default=0.25)
    args = parser.parse_args()
    sessions = args.sessions or (6 if args.quick else 20)
    backends = set((args.backends or ("sqlite" if args.quick else "sqlite,postgresql")).split(","))
    if "sqlite" in backends:
        with tempfile.TemporaryDirectory() as workdir:
            url = f"sqlite:///{Path(workdir) / 'bench.db'}"
            await bench(url, sessions, args.summarizer_s, args.model_s)
    if "postgresql" in backends:
        async with scratch_database() as rendered:
            await bench(rendered, sessions, args.summarizer_s, args.model_s)


if __name__ == "__main__":
    asyncio.run(main())
