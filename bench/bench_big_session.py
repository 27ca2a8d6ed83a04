"""A 100,000-item session on SQLite and PostgreSQL: what each operation costs in time, memory
and event-loop stall (issue #34).

    python bench/bench_big_session.py            # 100,000 items, both backends
    python bench/bench_big_session.py --items 20000 --compact-items 4000 --backend sqlite

For each operation: its duration and the loop's longest stall (a 1 ms heartbeat on the
same loop, as bench_loop_stall.py measures it), then, run again under tracemalloc, the peak
of Python allocations it made, and the process's peak RSS so far. `sessions show --tail`
runs as the real command in its own process: its time and peak RSS. Figures, not
thresholds: docs/PERFORMANCE.md records a run.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench_loop_stall import _stall_during
from scratch_pg import scratch_database

from sessionstore import SessionStore
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy

SID = "big"
BATCH = 1_000
WORDS = ("deploy", "shard", "cache", "invoice", "latency", "retry", "rollback", "canary", "quota")


def _items(start: int, count: int) -> list[dict[str, Any]]:
    """Turns of a long agent session: questions, answers, a tool call and its output."""
    items: list[dict[str, Any]] = []
    for n in range(start, start + count):
        word = WORDS[n % len(WORDS)]
        match n % 4:
            case 0:
                items.append({"role": "user", "content": f"Step {n}: check the {word} of job {n}."})
            case 1:
                call = {"type": "function_call", "call_id": f"c{n}", "name": "inspect"}
                items.append({**call, "arguments": f'{{"job": {n}}}'})
            case 2:
                out = f"job {n}: {word} ok, 12.4 ms, shard {n % 97}"
                items.append(
                    {"type": "function_call_output", "call_id": f"c{n - 1}", "output": out}
                )
            case _:
                items.append({"role": "assistant", "content": f"The {word} of job {n} is fine."})
    return items


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _measure(label: str, backend: str, work: Callable[[], Awaitable[Any]]) -> None:
    took, stall = await _stall_during(work)
    tracemalloc.start()
    await work()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"{backend:10} {label:34} {took:8.2f} s  stall {stall * 1e3:7.1f} ms  "
        f"alloc peak {peak / 2**20:7.1f} MiB  RSS peak {_rss_mb():7.0f} MiB"
    )


# The real command in its own process, reporting its own peak RSS (VmHWM: the high-water
# mark of its memory since exec; ru_maxrss would include the parent's from before exec).
_CHILD = """
import atexit, runpy, sys
def report():
    hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM")]
    sys.stderr.write("\\n" + hwm[0])
atexit.register(report)
sys.argv = ["sessionstore", *sys.argv[1:]]
runpy.run_module("sessionstore.cli", run_name="__main__")
"""


def _show_tail(url: str, backend: str) -> None:
    started = time.perf_counter()
    command = ["sessions", "show", "--tail", "20", "--url", url, "--", SID]
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *command], capture_output=True, text=True, check=False
    )
    took = time.perf_counter() - started
    hwm = done.stderr.rsplit("VmHWM:", 1)[-1].split()
    peak = f"{int(hwm[0]) / 1024:7.0f} MiB" if hwm and hwm[0].isdigit() else "?"
    state = "ok" if done.returncode == 0 else f"exit {done.returncode}"
    print(
        f"{backend:10} {'sessions show --tail 20 (process)':34} {took:8.2f} s  "
        f"{'':41}RSS peak {peak}  {state}"
    )


async def _run(url: str, backend: str, count: int, compact_items: int) -> None:
    async with SessionStore(url, create_tables=True) as store:
        started = time.perf_counter()
        for start in range(0, count, BATCH):
            await store.append(SID, _items(start, min(BATCH, count - start)))
        print(
            f"{backend:10} {f'append {count:,} items in batches':34} "
            f"{time.perf_counter() - started:8.2f} s"
        )
        middle = count // 2
        await _measure("load_context", backend, lambda: store.load_context(SID))
        await _measure("load_context(limit=50)", backend, lambda: store.load_context(SID, 50))
        await _measure(
            f"time travel (as_of={middle:,})",
            backend,
            lambda: store.load_context(SID, as_of=middle),
        )
        await _measure("verify_history", backend, lambda: store.verify_history(SID))
        await _measure(
            "search 'canary'",
            backend,
            lambda: store.search("canary", session_id=SID),
        )
        _show_tail(url, backend)
        policy = CompactionPolicy(keep_recent_turns=2)
        manager = CompactionManager(CompactionConfig(store=store, policy=policy))
        # Compactions run on branches forked at `compact_items` (the rows shared, not
        # copied): the extractive summarizer did not finish 100,000 items within 20 minutes
        # on the 2-core VM, so its cost is measured on a part. Timed, then traced: two forks.
        for copy in ("timed", "traced"):
            await store.fork(SID, f"{SID}-{copy}", at=compact_items)
        targets = iter([f"{SID}-timed", f"{SID}-traced"])
        await _measure(
            f"compact {compact_items:,} items (extractive)",
            backend,
            lambda: manager.compact(next(targets), trigger="manual"),
        )
        await _measure(
            "load_context after compaction", backend, lambda: store.load_context(f"{SID}-timed")
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--compact-items", type=int, default=20_000)
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    args = parser.parse_args()
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite:///{Path(folder) / 'big.db'}"
            await _run(url, "SQLite", args.items, args.compact_items)
    if args.backend in ("postgresql", "both"):
        async with scratch_database() as url:
            await _run(url, "PostgreSQL", args.items, args.compact_items)


if __name__ == "__main__":
    asyncio.run(main())
