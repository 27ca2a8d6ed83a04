"""Compaction overhead without the LLM call, and the pre-flight cost per model call.

    python bench/bench_compaction.py            # SQLite and PostgreSQL
    python bench/bench_compaction.py --quick
    python bench/bench_compaction.py --quick --preflight-only

1. Compaction of sessions with 1k and 10k items, split into: reading the active
   context, partitioning/fitting (CPU), and persisting (the one transaction that
   writes the marker, copies, compactions row, archive and events). The
   summarizer returns a fixed summary instantly, so no LLM time is included.
2. Pre-flight before a model call on a large context, handed a fresh copy of the history
   as the SDK does: ours (the decision taken in the call's record from the stored total,
   the digest and hygiene of the items not seen before) against the naive way
   (re-tokenize the whole context every call), in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agents import Agent
from agents.run_config import CallModelData, ModelInputData
from scratch_pg import scratch_database
from sqlalchemy.engine import make_url

from sessionstore import Keyring, LocalKey, SessionStore, SQLSession, visible_rows
from sessionstore.adapters.agents_sdk import input_filter
from sessionstore.compaction import (
    CompactionConfig,
    CompactionManager,
    CompactionPolicy,
    MaskingPolicy,
    SummaryRequest,
    SummaryResult,
    normalize,
)
from sessionstore.compaction._partition import build_units, fit  # measured directly

WORDS = [
    "deploy",
    "build",
    "branch",
    "config",
    "test",
    "cache",
    "schema",
    "index",
    "latency",
    "budget",
    "rollout",
]


class InstantSummarizer:
    """A summarizer that costs nothing, so only our own overhead is measured."""

    name = "instant"
    input_window: int | None = None

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult(f"{len(request.items)} items summarized.")


def items(count: int) -> list[dict[str, Any]]:
    """`count` items: turns of user, call, output, assistant (~100 tokens an item)."""
    made: list[dict[str, Any]] = []
    n = 0
    while len(made) < count:
        text = " ".join(WORDS[(n + k) % len(WORDS)] for k in range(70))
        made += [
            {"role": "user", "content": f"step {n}: {text}"},
            {"type": "function_call", "call_id": f"c{n}", "name": "grep", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{n}", "output": text},
            {"role": "assistant", "content": [{"type": "output_text", "text": text}]},
        ]
        n += 1
    return made[:count]


async def timed(work: Awaitable[Any]) -> tuple[float, Any]:
    gc.collect(1)
    start = time.perf_counter()
    result = await work
    return (time.perf_counter() - start) * 1000, result


async def bench_sealing_cost(url: str, size: int, repeats: int) -> None:
    """What sealing archives (AES-256-GCM envelope) adds to a compaction, same run."""
    print(
        f"\ncompaction with sealed vs plain archives, {size:,} items "
        f"({make_url(url).get_backend_name()})",
        flush=True,
    )
    results: dict[str, float] = {}
    keyrings = {"plain": None, "sealed": Keyring([LocalKey.generate("bench")])}
    samples: dict[str, list[float]] = {name: [] for name in keyrings}
    stores = {
        name: SessionStore(url, create_tables=True, keyring=ring) for name, ring in keyrings.items()
    }
    try:
        for r in range(repeats):
            for name, store in stores.items():
                manager = CompactionManager(
                    CompactionConfig(
                        max_context_tokens=5_000_000, store=store, summarizer=InstantSummarizer()
                    )
                )
                sid = f"seal-{name}-{r}-{uuid.uuid4().hex[:6]}"
                batch = items(size)
                for start in range(0, size, 500):
                    await store.append(sid, batch[start : start + 500])
                # SQLite indexes appended rows for search once the writer is idle: done now, or
                # the timed compaction would share the writer and the cores with that indexing.
                await store.database.catch_up_search_index()
                ms, outcome = await timed(manager.compact(sid))
                assert outcome.compacted
                samples[name].append(ms)
        for name, values in samples.items():
            results[name] = statistics.median(values)
            print(f"  {name:<7}{results[name]:>9.1f} ms")
        print(
            f"  sealing adds {results['sealed'] - results['plain']:+.1f} ms "
            f"({results['sealed'] / results['plain']:.2f}x)"
        )
    finally:
        for store in stores.values():
            await store.close()


async def bench_compaction(url: str, sizes: tuple[int, ...], repeats: int) -> None:
    print(f"\ncompaction overhead, no LLM ({make_url(url).get_backend_name()})", flush=True)
    print(
        f"  {'items':>7}{'read ms':>10}{'partition ms':>14}{'persist ms':>12}{'total ms':>10}"
        f"{'end-to-end ms':>15}"
    )
    async with SessionStore(url, create_tables=True) as store:
        policy = CompactionPolicy(hard_cap_buffer=0, recent_user_token_budget=2_000)
        manager = CompactionManager(
            CompactionConfig(
                max_context_tokens=5_000_000,
                policy=policy,
                store=store,
                summarizer=InstantSummarizer(),
            )
        )
        await store.append("warmup", items(200))
        await manager.compact("warmup")  # first-use costs (threads, pools) are not overhead
        for size in sizes:
            phases: dict[str, list[float]] = {"read": [], "partition": [], "persist": [], "e2e": []}
            for r in range(repeats):
                sid = f"c{size}-{r}-{uuid.uuid4().hex[:6]}"
                batch = items(size)
                for start in range(0, size, 500):
                    await store.append(sid, batch[start : start + 500])
                # SQLite indexes appended rows for search once the writer is idle: done now, or
                # the timed compaction would share the writer and the cores with that indexing.
                await store.database.catch_up_search_index()
                read_ms, rows = await timed(store.context_rows(sid))
                start_cpu = time.perf_counter()
                units = build_units(visible_rows(rows), policy)
                fit(
                    units,
                    policy,
                    target=policy.target(5_000_000),
                    ceiling=5_000_000,
                    fixed_tokens=0,
                    estimator=store.estimator,
                )
                partition_ms = (time.perf_counter() - start_cpu) * 1000
                e2e_ms, outcome = await timed(manager.compact(sid))
                assert outcome.compacted
                persist_ms = max(e2e_ms - read_ms - partition_ms, 0.0)
                phases["read"].append(read_ms)
                phases["partition"].append(partition_ms)
                phases["persist"].append(persist_ms)
                phases["e2e"].append(e2e_ms)
            med = {k: statistics.median(v) for k, v in phases.items()}
            print(
                f"  {size:>7,}{med['read']:>10.1f}{med['partition']:>14.1f}{med['persist']:>12.1f}"
                f"{med['read'] + med['partition'] + med['persist']:>10.1f}{med['e2e']:>15.1f}",
                flush=True,
            )


async def bench_preflight(url: str, repeats: int) -> None:
    print(
        f"\npre-flight per model call, ~128k-token context ({make_url(url).get_backend_name()})",
        flush=True,
    )
    async with SessionStore(url, create_tables=True) as store:
        sid = f"pf-{uuid.uuid4().hex[:6]}"
        context = items(2_200)  # ~128k tokens
        for start in range(0, len(context), 500):
            await store.append(sid, context[start : start + 500])
        stored = await store.context_tokens(sid)
        agent: Agent[Any] = Agent(name="a", instructions="Be brief.")
        unsaved = items(4)
        session = SQLSession(sid, store)  # its get_items starts the run the filter sees
        model_input: list[Any] = [*await session.get_items(), *unsaved]

        def sdk_input() -> CallModelData[Any]:
            """What the SDK hands the filter: a fresh copy of the history every call."""
            # New dicts and lists, shared strings; its garbage is collected whenever Python's
            # own thresholds say, as in a run (a forced full collection before every call
            # leaves the caches cold and adds ~1 ms to whatever runs next: docs/PERFORMANCE.md).
            fresh = copy.deepcopy(model_input)
            return CallModelData(ModelInputData(input=fresh, instructions="Be brief."), agent, None)

        contenders: dict[str, Callable[[CallModelData[Any]], Awaitable[Any]]] = {}
        for record in (True, False):
            manager = CompactionManager(
                CompactionConfig(
                    max_context_tokens=10_000_000,
                    store=store,
                    summarizer=InstantSummarizer(),
                    record_idle_decisions=record,
                )
            )
            label = "ours, decision events stored" if record else "ours, decisions not stored"
            contenders[label] = input_filter(manager)
        masking = MaskingPolicy(enabled=True, min_output_tokens=50)  # every output masks
        masked = CompactionManager(
            CompactionConfig(
                max_context_tokens=10_000_000,
                policy=CompactionPolicy(masking=masking),
                store=store,
                summarizer=InstantSummarizer(),
            )
        )
        contenders["ours, old tool outputs masked"] = input_filter(masked)

        async def first_of_a_process(data: CallModelData[Any]) -> Any:
            return await contenders["ours, decision events stored"](data)

        async def full_hygiene(data: CallModelData[Any]) -> Any:
            return normalize(data.model_data.input)

        async def naive(data: CallModelData[Any]) -> int:
            return sum(store.estimator.count_item(item) for item in data.model_data.input)

        contenders["  ours, a session's first call"] = first_of_a_process
        contenders["full hygiene pass (before: every call)"] = full_hygiene
        contenders["naive: re-tokenize the context"] = naive
        samples: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(repeats):
            for name, call in contenders.items():
                if call is first_of_a_process:  # a new session object: nothing memoized yet
                    await SQLSession(sid, store).get_items()
                data = sdk_input()
                ms, _ = await timed(call(data))
                samples[name].append(ms)
                await session.get_items()  # the run of the long-lived session again
        ours = statistics.median(samples["ours, decisions not stored"])
        print(f"  context: {stored:,} tokens in {len(context):,} items; 4 unsaved items")
        for name, values in samples.items():
            median = statistics.median(values)
            print(f"  {name:<40}{median:>9.3f} ms   ours/this {ours / median:>6.3f}x")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--preflight-only", action="store_true", help="skip compaction runs")
    args = parser.parse_args()
    repeats = 2 if args.quick else 5
    backends = set(args.backends.split(","))
    if "sqlite" in backends:
        with tempfile.TemporaryDirectory() as workdir:
            await bench_all(f"sqlite:///{Path(workdir) / 'bench.db'}", repeats, args)
    if "postgresql" in backends:
        async with scratch_database() as rendered:
            await bench_all(rendered, repeats, args)


async def bench_all(url: str, repeats: int, args: argparse.Namespace) -> None:
    if not args.preflight_only:
        await bench_compaction(url, (1_000, 10_000), repeats)
        await bench_sealing_cost(url, 1_000, repeats * 2)
    await bench_preflight(url, repeats * 4)


if __name__ == "__main__":
    asyncio.run(main())
