"""Throughput at scale: ours vs the SDK's SQLiteSession and SQLAlchemySession, in one run.

    python bench/bench_scale.py            # SQLite and PostgreSQL
    python bench/bench_scale.py --quick    # fewer turns

1. Concurrent sessions: 1, 16 and 64 agents each append turns (4 items) to their own
   session on ONE database, as fast as they can; turns per second, the median of three
   interleaved rounds (warm stores: the first open and its migration are excluded).
   Our SQLite store commits concurrent appends together (group commit, synchronous=FULL).
2. Bulk append: batches of 100 items (an import, a restored history) into fresh sessions.

Ratios are ours/theirs in throughput: > 1.00x means ours does more per second.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench_store import Contender, Item, ours, sdk_sqlalchemy, sdk_sqlite, turn
from scratch_pg import scratch_database

CONCURRENCY = (1, 16, 64)
ROUNDS = 3


async def _turns_per_second(contender: Contender, sessions: int, turns: int, tag: str) -> float:
    async def agent(s: int) -> None:
        for n in range(turns):
            await contender.add_items(f"{tag}-{s}", turn(n))

    started = time.perf_counter()
    await asyncio.gather(*(agent(s) for s in range(sessions)))
    return sessions * turns / (time.perf_counter() - started)


async def _bulk_items_per_second(contender: Contender, batches: int, tag: str) -> float:
    batch: list[Item] = [item for n in range(25) for item in turn(n)]  # 100 items
    started = time.perf_counter()
    for b in range(batches):
        await contender.add_items(f"{tag}-{b}", batch)
    return batches * len(batch) / (time.perf_counter() - started)


async def _interleaved(
    contenders: list[Contender], measure: Callable[[Contender, str], Awaitable[float]]
) -> dict[str, float]:
    """Median over ROUNDS; every round runs every contender once, in rotating order."""
    samples: dict[str, list[float]] = {c.name: [] for c in contenders}
    for round_ in range(ROUNDS):
        order = contenders[round_ % len(contenders) :] + contenders[: round_ % len(contenders)]
        for contender in order:
            samples[contender.name].append(await measure(contender, f"r{round_}"))
    return {name: statistics.median(values) for name, values in samples.items()}


def _report(title: str, unit: str, results: dict[str, float]) -> None:
    ours_value = results["sessionstore"]
    print(f"\n{title}")
    print(f"  {'contender':24} {unit:>12}  ours/this")
    for name, value in results.items():
        ratio = "" if name == "sessionstore" else f"{ours_value / value:8.2f}x"
        print(f"  {name:24} {value:12,.0f}  {ratio}")


async def run(label: str, contenders: list[Contender], turns: int, batches: int) -> None:
    print(f"\n=== {label} ===")
    for sessions in CONCURRENCY:
        per_session = max(turns // sessions, 5) if sessions > 1 else turns

        async def measure(
            contender: Contender, tag: str, sessions: int = sessions, turns: int = per_session
        ) -> float:
            return await _turns_per_second(contender, sessions, turns, f"c{sessions}{tag}")

        results = await _interleaved(contenders, measure)
        title = f"{sessions} concurrent session(s), {per_session} turns each"
        _report(title, "turns/s", results)

    async def bulk(contender: Contender, tag: str) -> float:
        return await _bulk_items_per_second(contender, batches, f"bulk{tag}")

    _report(
        f"bulk append, {batches} batches of 100 items",
        "items/s",
        await _interleaved(contenders, bulk),
    )
    for contender in contenders:
        await contender.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer turns (smoke run)")
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    turns, batches = (64, 10) if args.quick else (640, 50)
    print("sessionstore scale benchmark (ratios: ours/theirs in throughput, > 1.00x = ours faster)")
    if "sqlite" in args.backends:
        with tempfile.TemporaryDirectory() as folder:
            workdir = Path(folder)
            contenders = [
                await ours(f"sqlite:///{workdir / 'ours.db'}"),
                await sdk_sqlite(workdir / "sdk.db"),
                await sdk_sqlalchemy(f"sqlite+aiosqlite:///{workdir / 'sdk_sqla.db'}"),
            ]
            await run("SQLite (synchronous=FULL)", contenders, turns, batches)
    if "postgresql" in args.backends:
        async with scratch_database() as url:
            await run("PostgreSQL", [await ours(url), await sdk_sqlalchemy(url)], turns, batches)


if __name__ == "__main__":
    asyncio.run(main())
