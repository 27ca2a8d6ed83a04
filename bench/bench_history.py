"""History queries: ours vs the SDK's AdvancedSQLiteSession, in one run.

The same synthetic turns (bench_store's: a user message, a tool call, its output, an answer)
go into both; then, interleaved round by round, medians of: listing the user turns
(`get_conversation_turns`), finding the turns that mention a branch (`find_turns_by_content`,
and our full-text `store.search`), tool usage per turn (`get_tool_usage`), and, ours only, the
context as it stood halfway (`load_context(as_of=...)`) next to a plain load. Ratios are
ours / theirs; below 1.00x we are faster. PostgreSQL has no SDK anchor: absolute figures.

    python bench/bench_history.py              # 1,000 and 5,000 turns
    python bench/bench_history.py --quick      # 200 and 1,000 turns
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from agents.extensions.memory import AdvancedSQLiteSession
from bench_store import turn
from scratch_pg import scratch_database

from sessionstore import SessionStore, SQLSession

Op = Callable[[], Awaitable[Any]]


async def timed(op: Op) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        await op()
        return (time.perf_counter() - start) * 1000
    finally:
        gc.enable()


async def fill(session: Any, turns: int) -> None:
    for n in range(turns):
        await session.add_items(turn(n))


async def compare(ops: dict[str, dict[str, Op]], rounds: int) -> dict[str, dict[str, float]]:
    """Medians (ms) of every contender's version of every operation, interleaved."""
    samples: dict[str, dict[str, list[float]]] = {
        name: {who: [] for who in versions} for name, versions in ops.items()
    }
    for round_ in range(rounds):
        for name, versions in ops.items():
            order = list(versions)
            order = order[round_ % len(order) :] + order[: round_ % len(order)]
            for who in order:
                samples[name][who].append(await timed(versions[who]))
    return {
        name: {who: statistics.median(values) for who, values in per.items()}
        for name, per in samples.items()
    }


def report(title: str, medians: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}")
    for name, per in medians.items():
        cells = []
        ours = per.get("ours")
        for who, ms in per.items():
            ratio = f" ({ours / ms:.2f}x)" if who != "ours" and ours is not None and ms else ""
            cells.append(f"{who} {ms:8.2f} ms{ratio}")
        print(f"  {name:<34} " + " | ".join(cells))


async def sqlite_run(turns: int, rounds: int, tmp: Path) -> None:
    theirs = AdvancedSQLiteSession(
        session_id="b", db_path=str(tmp / f"advanced-{turns}.db"), create_tables=True
    )
    async with SessionStore(f"sqlite:///{tmp / f'ours-{turns}.db'}") as store:
        ours = SQLSession("b", store)
        await fill(theirs, turns)
        await fill(ours, turns)
        needle = f"feat-{turns // 2}"
        mid = 4 * (turns // 2)
        ops: dict[str, dict[str, Op]] = {
            "get_conversation_turns": {
                "ours": ours.get_conversation_turns,
                "AdvancedSQLiteSession": theirs.get_conversation_turns,
            },
            "find_turns_by_content": {
                "ours": lambda: ours.find_turns_by_content(needle),
                "AdvancedSQLiteSession": lambda: theirs.find_turns_by_content(needle),
            },
            "full-text search (ours) vs find": {
                "ours": lambda: store.search(needle, session_id="b"),
                "AdvancedSQLiteSession": lambda: theirs.find_turns_by_content(needle),
            },
            "get_tool_usage": {
                "ours": ours.get_tool_usage,
                "AdvancedSQLiteSession": theirs.get_tool_usage,
            },
            "load as of halfway vs plain load": {
                "ours": lambda: store.load_context("b", as_of=mid),
                "plain load": lambda: store.load_context("b"),
            },
        }
        report(f"SQLite, {turns:,} turns ({4 * turns:,} items)", await compare(ops, rounds))
    theirs.close()


async def postgres_run(turns: int, rounds: int) -> None:
    async with scratch_database() as url, SessionStore(url, create_tables=True) as store:
        ours = SQLSession("b", store)
        await fill(ours, turns)
        async with store.engine.begin() as conn:  # what autovacuum does on a live database
            await conn.execute(sa.text("ANALYZE"))
        needle = f"feat-{turns // 2}"
        ops: dict[str, dict[str, Op]] = {
            "get_conversation_turns": {"ours": ours.get_conversation_turns},
            "find_turns_by_content": {"ours": lambda: ours.find_turns_by_content(needle)},
            "full-text search": {"ours": lambda: store.search(needle, session_id="b")},
            "get_tool_usage": {"ours": ours.get_tool_usage},
            "load as of halfway vs plain load": {
                "ours": lambda: store.load_context("b", as_of=4 * (turns // 2)),
                "plain load": lambda: store.load_context("b"),
            },
        }
        report(f"PostgreSQL, {turns:,} turns ({4 * turns:,} items)", await compare(ops, rounds))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sessions, fewer rounds")
    args = parser.parse_args()
    sizes, rounds = ((200, 1_000), 5) if args.quick else ((1_000, 5_000), 7)
    with tempfile.TemporaryDirectory() as tmp:
        for turns in sizes:
            await sqlite_run(turns, rounds, Path(tmp))
            await postgres_run(turns, rounds)


if __name__ == "__main__":
    asyncio.run(main())
