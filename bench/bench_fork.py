"""Branching: our `fork` (shares the parent's rows) vs the SDK's AdvancedSQLiteSession
`create_branch_from_turn` (copies them), in one run.

For each history length: the rows a fork writes (counted in the database before and after),
the median time of a fork at the newest row (constant), at the middle seq (an index lookup plus
a sum over the context it shares, in SQL) and at the middle turn (finding the Nth user message
reads the session's rows), and the first load of the branch. At 10,000 items both stores
branch from the same middle turn and the ratio is ours / theirs (below 1.00x we are faster).
PostgreSQL has no SDK anchor: absolute figures.

    python bench/bench_fork.py            # 1,000, 10,000 and 100,000 items
    python bench/bench_fork.py --quick    # 1,000 and 10,000 items
"""

from __future__ import annotations

import argparse
import asyncio
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

from sessionstore import HistoryPoint, SessionStore

ITEMS_PER_TURN = 4
BATCH_TURNS = 25  # 100 items per append while filling


async def fill_ours(store: SessionStore, session_id: str, turns: int) -> None:
    for first in range(0, turns, BATCH_TURNS):
        batch = [item for n in range(first, min(first + BATCH_TURNS, turns)) for item in turn(n)]
        await store.append(session_id, batch)


async def rows(store: SessionStore) -> tuple[int, int]:
    async with store.engine.connect() as conn:
        messages = (await conn.execute(sa.text("SELECT count(*) FROM messages"))).scalar_one()
        sessions = (await conn.execute(sa.text("SELECT count(*) FROM sessions"))).scalar_one()
    return int(messages), int(sessions)


async def median_ms(op: Callable[[int], Awaitable[Any]], rounds: int) -> float:
    samples = []
    for round_ in range(rounds):
        start = time.perf_counter()
        await op(round_)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


async def ours(url: str, turns: int, rounds: int) -> dict[str, float]:
    async with SessionStore(url, create_tables=True) as store:
        await fill_ours(store, "parent", turns)
        before = await rows(store)
        await store.fork("parent", "probe")
        after = await rows(store)
        middle = HistoryPoint.before_turn(turns // 2)
        newest = await median_ms(lambda n: store.fork("parent", f"new-{n}"), rounds)
        at_middle = await median_ms(lambda n: store.fork("parent", f"mid-{n}", at=middle), rounds)
        half = ITEMS_PER_TURN * turns // 2
        at_seq = await median_ms(lambda n: store.fork("parent", f"seq-{n}", at=half), rounds)
        load = await median_ms(lambda n: store.load_context(f"mid-{n}"), rounds)
        parent_load = await median_ms(lambda n: store.load_context("parent"), rounds)
        return {
            "message rows written": after[0] - before[0],
            "session rows written": after[1] - before[1],
            "fork at newest (ms)": newest,
            "fork at middle turn (ms)": at_middle,
            "fork at middle seq (ms)": at_seq,
            "first load of branch (ms)": load,
            "load of parent (ms)": parent_load,
        }


async def theirs(path: Path, turns: int, rounds: int) -> dict[str, float]:
    session = AdvancedSQLiteSession(session_id="parent", db_path=str(path), create_tables=True)
    for first in range(0, turns, BATCH_TURNS):
        batch = [item for n in range(first, min(first + BATCH_TURNS, turns)) for item in turn(n)]
        await session.add_items(batch)  # type: ignore[arg-type]
    middle = turns // 2

    async def branch(n: int) -> None:
        await session.switch_to_branch("main")
        await session.create_branch_from_turn(middle, f"mid-{n}")

    at_middle = await median_ms(branch, rounds)
    load = await median_ms(lambda n: session.get_items(), rounds)
    session.close()
    return {"fork at middle turn (ms)": at_middle, "first load of branch (ms)": load}


def show(title: str, figures: dict[str, float], anchor: dict[str, float] | None = None) -> None:
    print(f"\n{title}")
    for name, value in figures.items():
        line = f"  {name:<28} {value:10.2f}"
        if anchor and name in anchor:
            line += f"   AdvancedSQLiteSession {anchor[name]:10.2f}  ({value / anchor[name]:.2f}x)"
        print(line)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 100,000-item history")
    args = parser.parse_args()
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    rounds = 7
    with tempfile.TemporaryDirectory() as tmp:
        for items in sizes:
            turns = items // ITEMS_PER_TURN
            url = f"sqlite:///{Path(tmp) / f'ours-{items}.db'}"
            figures = await ours(url, turns, rounds)
            anchor = None
            if items == 10_000:
                anchor = await theirs(Path(tmp) / f"advanced-{items}.db", turns, rounds)
            show(f"SQLite, {items:,} items", figures, anchor)
            async with scratch_database() as pg_url:
                show(f"PostgreSQL, {items:,} items", await ours(pg_url, turns, rounds))


if __name__ == "__main__":
    asyncio.run(main())
