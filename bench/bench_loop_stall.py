"""The event loop's longest stall while the store does heavy work (SQLite and PostgreSQL).

    python bench/bench_loop_stall.py            # both backends
    python bench/bench_loop_stall.py --quick    # smaller inputs

A heartbeat task sleeps 1 ms at a time and records the longest gap between its
wake-ups while, on the same loop, the store:
1. appends one large tool output through `store.append` (exact token counting),
2. appends a 50 MB tool output through a CompactionManager (write-time truncation,
   the original archived),
3. compacts a session of 6,000 items with the extractive summarizer.
Every other task of an application waits for at least the longest gap. The gap is
printed beside the operation's own duration: work done on worker threads shows as
a long operation with a short gap.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from scratch_pg import scratch_database

from sessionstore import SessionStore
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy

LINE = "2026-11-25 02:51:07 INFO worker-3 processed batch 1842 in 12.4 ms (ok)\n"


async def _stall_during(work: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """(seconds the work took, longest gap in seconds between 1 ms heartbeats)."""
    longest = 0.0
    done = asyncio.Event()

    async def heartbeat() -> None:
        nonlocal longest
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now

    beat = asyncio.create_task(heartbeat())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    await work()
    took = time.perf_counter() - started
    done.set()
    await beat
    return took, longest


def _report(backend: str, what: str, took: float, gap: float) -> None:
    print(f"{backend:10} {what:28} {took:7.2f} s   longest stall {gap * 1e3:7.1f} ms")


def _output(call_id: str, size: int) -> list[dict[str, Any]]:
    text = (LINE * (size // len(LINE) + 1))[:size]
    return [
        {"type": "function_call", "call_id": call_id, "name": "read_logs", "arguments": "{}"},
        {"type": "function_call_output", "call_id": call_id, "output": text},
    ]


def _turns(count: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for n in range(count // 2):
        items.append({"role": "user", "content": f"Step {n}: check shard {n % 97} of job {n}."})
        items.append({"role": "assistant", "content": f"Shard {n % 97} of job {n} is healthy."})
    return items


async def _run(url: str, label: str, quick: bool) -> None:
    big = 2_000_000 if quick else 8_000_000
    huge = 5_000_000 if quick else 50_000_000
    items = 1_000 if quick else 6_000
    async with SessionStore(url, create_tables=True) as store:
        took, gap = await _stall_during(lambda: store.append("big", _output("c1", big)))
        _report(label, f"store.append, {big / 1e6:.0f} MB output", took, gap)
        manager = CompactionManager(CompactionConfig(store=store))
        took, gap = await _stall_during(lambda: manager.append("huge", _output("c2", huge)))
        _report(label, f"manager.append, {huge / 1e6:.0f} MB output", took, gap)
        for start in range(0, items, 500):
            await store.append("long", _turns(items)[start : start + 500])
        compactor = CompactionManager(
            CompactionConfig(store=store, policy=CompactionPolicy(keep_recent_turns=2))
        )
        took, gap = await _stall_during(lambda: compactor.compact("long", trigger="manual"))
        _report(label, f"compact {items:,} items", took, gap)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        await _run(f"sqlite:///{folder}/stall.db", "SQLite", args.quick)
    async with scratch_database() as url:
        await _run(url, "PostgreSQL", args.quick)


if __name__ == "__main__":
    asyncio.run(main())
