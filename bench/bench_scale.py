"""Scale: ours vs the SDK's SQLiteSession and SQLAlchemySession, SQLite and PostgreSQL, one run.

    python bench/bench_scale.py                  # 1,000,000-row tables: 5-12 min on 2 cores
    python bench/bench_scale.py --quick          # 100,000-row tables, fewer turns: 1-2 min
    python bench/bench_scale.py --rows 300000 --backends sqlite

0. The machine: a Python loop and an fsync, timed first (ours is bound by the one and
   SQLiteSession by the other: the SQLite ratios move with this line from day to day).
1. Concurrent sessions: 1, 16 and 64 agents each append turns (4 items) to their own
   session on ONE database, as fast as they can; turns per second, the median of three
   interleaved rounds (warm stores: the first open and its migration are excluded).
   Our SQLite store commits concurrent appends together (group commit, synchronous=FULL).
   What a contender defers past its calls (ours: the full-text index of the appended rows,
   done when its writer idles) runs after each of its timed rounds, so it never lands in
   another contender's round (Contender.settle).
2. Bulk append: batches of 100 items (an import, a restored history) into fresh sessions;
   items/s of the appends, and ours with the deferred indexing of those rows timed after.
3. Lone writer: one turn appended to one session at a time, nobody else writing (what an
   agent does between model calls); per-call latency, medians over interleaved rounds
   (bench_store.bench_append). Our store counts every item's tokens exactly and stores them.
4. Table size: each contender on two databases at once, one almost empty (20 sessions of
   100 items), one filled through its own public API with 100-item batches to --rows
   message rows (10,000 sessions x 100 items by default, a session object per batch as an
   application makes one per conversation, not kept; fill time printed). On both, in
   the same interleaved rounds (this VM's fsync cost drifts too much to time the two states
   minutes apart): loading a session's active context of 100 items (get_items) and
   appending one turn to a 100-item session, over 10 probe sessions spread over the table,
   each loaded once untimed first (so the SDK's per-session connection is open in both).
   full/empty is what the table's size costs; the target is <= 1.20x for our load.
5. Compaction (1k and 10k items, no LLM) and the pre-flight per model call, by
   bench_compaction.py's own functions, on our database of section 4 (the full table),
   once the contenders of sections 1-4 are closed and collected (our_costs).

Ratios: sections 1-2 are ours/theirs in throughput (> 1.00x = ours faster); sections 3-5
are ours/theirs in milliseconds (< 1.00x = ours faster), as in bench_store.py.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import tempfile
import time
import timeit
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from agents import SQLiteSession
from bench_compaction import bench_compaction, bench_preflight
from bench_store import (
    Contender,
    Item,
    _rotated,
    _timed,
    bench_append,
    ours,
    sdk_sqlalchemy,
    sdk_sqlite,
    settled,
    turn,
)
from bench_store import _report as report_latency
from scratch_pg import scratch_database

CONCURRENCY = (1, 16, 64)
ROUNDS = 3
BATCH: list[Item] = [item for n in range(25) for item in turn(n)]  # 100 items
PROBES = 10  # sessions timed in each state of the table-size section
FILL_WRITERS = 4  # concurrent fillers: lets every store use what it has (group commit, a pool)
COMPACTION_SIZES = (1_000, 10_000)


async def _turns_per_second(contender: Contender, sessions: int, turns: int, tag: str) -> float:
    async def agent(s: int) -> None:
        for n in range(turns):
            await contender.add_items(f"{tag}-{s}", turn(n))

    started = time.perf_counter()
    await asyncio.gather(*(agent(s) for s in range(sessions)))
    elapsed = time.perf_counter() - started
    await settled(contender)
    return sessions * turns / elapsed


async def _bulk_items_per_second(
    contender: Contender, batches: int, tag: str, deferred: dict[str, list[float]]
) -> float:
    """Items/s of the appends; the seconds of the work they deferred go to `deferred`."""
    started = time.perf_counter()
    for b in range(batches):
        await contender.add_items(f"{tag}-{b}", BATCH)
    elapsed = time.perf_counter() - started
    if contender.settle is not None:
        deferred.setdefault(contender.name, []).append(await settled(contender))
    return batches * len(BATCH) / elapsed


async def _interleaved(
    contenders: list[Contender], measure: Callable[[Contender, str], Awaitable[float]]
) -> dict[str, float]:
    """Median over ROUNDS; every round runs every contender once, in rotating order."""
    samples: dict[str, list[float]] = {c.name: [] for c in contenders}
    for round_ in range(ROUNDS):
        for contender in _rotated(contenders, round_):
            samples[contender.name].append(await measure(contender, f"r{round_}"))
    return {name: statistics.median(values) for name, values in samples.items()}


def _report(title: str, unit: str, results: dict[str, float]) -> None:
    ours_value = results["sessionstore"]
    print(f"\n{title}", flush=True)
    print(f"  {'contender':24} {unit:>12}  ours/this")
    for name, value in results.items():
        ratio = "" if name == "sessionstore" else f"{ours_value / value:8.2f}x"
        print(f"  {name:24} {value:12,.0f}  {ratio}")


async def throughput(contenders: list[Contender], turns: int, batches: int) -> None:
    """Sections 1 and 2."""
    for sessions in CONCURRENCY:
        per_session = max(turns // sessions, 5) if sessions > 1 else turns

        async def measure(
            contender: Contender, tag: str, sessions: int = sessions, turns: int = per_session
        ) -> float:
            return await _turns_per_second(contender, sessions, turns, f"c{sessions}{tag}")

        results = await _interleaved(contenders, measure)
        title = f"{sessions} concurrent session(s), {per_session} turns each"
        _report(title, "turns/s", results)

    deferred: dict[str, list[float]] = {}

    async def bulk(contender: Contender, tag: str) -> float:
        return await _bulk_items_per_second(contender, batches, f"bulk{tag}", deferred)

    results = await _interleaved(contenders, bulk)
    _report(f"bulk append, {batches} batches of 100 items", "items/s", results)
    items = batches * len(BATCH)
    for name, seconds in deferred.items():
        later = statistics.median(seconds)
        appends = items / results[name]
        print(
            f"  {name}: then indexes those {items:,} rows for search, {later * 1000:.1f} ms"
            f" (deferred to when its writer idles; run after each timed round): with it,"
            f" {items / (appends + later):,.0f} items/s",
            flush=True,
        )


# --- section 4: table size -------------------------------------------------------------------

Writer = Callable[[str, list[Item]], Awaitable[None]]


@dataclass
class Sized:
    """One contender of the table-size section: open on an almost empty and on a full database
    at once, so the two are timed in the same rounds (this machine's fsync cost drifts by 5x
    within a minute; states timed a fill apart would compare two different disks)."""

    empty: Contender
    full: Contender
    fill: Writer  # one 100-item batch into the full database, through the contender's own API


def sdk_sqlite_filler(path: Path) -> Writer:
    """SQLiteSession keeps a connection per session object and thread: open, add, close per
    batch, as an application would per conversation, not 10,000 open sessions."""

    async def write(sid: str, items: list[Item]) -> None:
        session = SQLiteSession(sid, str(path))
        try:
            await session.add_items(items)  # type: ignore[arg-type]
        finally:
            session.close()

    return write


def session_filler(contender: Contender) -> Writer:
    """One session object per batch, dropped after it, as an application makes one per
    conversation: the full table's 10,000 sessions' objects are not kept for the rest of the
    run (the SDK's SQLAlchemySession builds a MetaData and two Tables each: kept, they made
    the process 933,000 objects at --rows 200000, which every later full collection walked,
    ours included)."""
    make = contender.make
    assert make is not None, contender.name

    async def write(sid: str, items: list[Item]) -> None:
        await make(sid).add_items(items)

    return write


async def _fill(write: Writer, sids: list[str]) -> float:
    """Seconds to write one 100-item batch to each of `sids`, FILL_WRITERS at a time."""

    async def writer(k: int) -> None:
        for sid in sids[k::FILL_WRITERS]:
            await write(sid, BATCH)

    started = time.perf_counter()
    await asyncio.gather(*(writer(k) for k in range(FILL_WRITERS)))
    return time.perf_counter() - started


@dataclass
class Probe:
    """A contender in one state of its table, and the 100-item sessions timed there."""

    key: tuple[str, str]  # (contender, "empty" | "full")
    contender: Contender
    load: list[str]
    append: list[str]


async def _probe(probes: list[Probe], repeats: int) -> dict[str, dict[tuple[str, str], float]]:
    """Median ms of get_items on `load` sessions and of a one-turn append to `append` ones."""
    for p in probes:
        for sid in p.load + p.append:  # untimed: opens the SDK's per-session objects
            assert len(await p.contender.get_items(sid)) == len(BATCH), (p.key, sid)
    samples: dict[str, dict[tuple[str, str], list[float]]] = {
        op: {p.key: [] for p in probes} for op in ("load", "append")
    }
    for n in range(repeats):
        for p in _rotated(probes, n):
            samples["load"][p.key].append(await _timed(p.contender.get_items(p.load[n % PROBES])))
    for n in range(repeats):
        for p in _rotated(probes, n):
            call = p.contender.add_items(p.append[n % PROBES], turn(10_000 + n))
            samples["append"][p.key].append(await _timed(call))
    return {
        op: {key: statistics.median(values) for key, values in by_key.items()}
        for op, by_key in samples.items()
    }


async def table_size(sized: list[Sized], rows: int, repeats: int) -> None:
    """Section 4: the same probes on an almost empty table and on one of `rows` rows."""
    sessions = rows // len(BATCH)
    empty_load = [f"probe-load-{k}" for k in range(PROBES)]
    empty_append = [f"probe-append-{k}" for k in range(PROBES)]
    filled = [f"fill-{i}" for i in range(sessions)]
    fill_s: dict[str, float] = {}
    for s in sized:
        # Written as the full table is (FILL_WRITERS at a time), so both leave the store's
        # pool in the same state: SQLAlchemySession timed 1.3x slower on the database it had
        # used one connection at a time.
        await _fill(s.empty.add_items, empty_load + empty_append)
        fill_s[s.full.name] = await _fill(s.fill, filled)
        await settled(s.empty)  # the rest of what the fills deferred, before any probe
        await settled(s.full)
        print(f"  filled {s.full.name}: {fill_s[s.full.name]:.1f} s", flush=True)
    step = sessions // (2 * PROBES)  # probes spread evenly over the filled sessions
    full_load = [filled[(2 * k) * step] for k in range(PROBES)]
    full_append = [filled[(2 * k + 1) * step] for k in range(PROBES)]
    probes = [
        probe
        for s in sized
        for probe in (
            Probe((s.empty.name, "empty"), s.empty, empty_load, empty_append),
            Probe((s.full.name, "full"), s.full, full_load, full_append),
        )
    ]
    ms = await _probe(probes, repeats)

    print(
        f"\ntable size: almost empty ({2 * PROBES * len(BATCH):,} rows) vs full "
        f"({sessions:,} sessions x 100 items = {rows:,} rows); medians of {repeats} "
        "interleaved calls, ms",
        flush=True,
    )
    print(
        f"  {'contender':24}{'fill s':>8}{'rows/s':>9}  {'load empty':>10}{'full':>8}"
        f"{'full/empty':>11}  {'append empty':>12}{'full':>8}{'full/empty':>11}"
    )
    for s in sized:
        name = s.full.name
        le, lf = ms["load"][name, "empty"], ms["load"][name, "full"]
        ae, af = ms["append"][name, "empty"], ms["append"][name, "full"]
        print(
            f"  {name:24}{fill_s[name]:>8.1f}{rows / fill_s[name]:>9,.0f}  {le:>10.3f}"
            f"{lf:>8.3f}{lf / le:>10.2f}x  {ae:>12.3f}{af:>8.3f}{af / ae:>10.2f}x"
        )
    print("  ours/this, full table:")
    for s in sized[1:]:
        load = ms["load"]["sessionstore", "full"] / ms["load"][s.full.name, "full"]
        append = ms["append"]["sessionstore", "full"] / ms["append"][s.full.name, "full"]
        print(f"    {s.full.name:22} load {load:.2f}x, append {append:.2f}x")
    ratio = ms["load"]["sessionstore", "full"] / ms["load"]["sessionstore", "empty"]
    verdict = "met" if ratio <= 1.2 else "NOT met"
    print(f"  target, our load full/empty <= 1.20x: {ratio:.2f}x, {verdict}", flush=True)


# --- section 5: compaction and pre-flight ----------------------------------------------------


async def our_costs(url: str, settings: Settings) -> None:
    """Section 5 on our full database, in a process holding what an application's would: the
    earlier sections' contenders are closed and released by the caller, and what is left of
    them (SQLAlchemy's tables and event registries are cycles) is collected first. Else the
    first full collection inside a timed compaction frees them all (about a second here)."""
    gc.collect()
    await bench_compaction(url, COMPACTION_SIZES, settings.compaction_repeats)
    await bench_preflight(url, settings.compaction_repeats * 4)


# --- the run ---------------------------------------------------------------------------------


def machine_line(folder: Path) -> str:
    """What this machine does in the two units every figure here is made of, so runs of
    different days can be read together: Python CPU (ours is bound by it) and an fsync
    (`SQLiteSession` is bound by it). Two runs whose lines differ compare two machines."""
    loop_ms = min(timeit.repeat("sum(range(1_000_000))", number=1, repeat=5)) * 1000
    path = folder / "fsync-probe"
    samples = []
    with open(path, "wb") as probe:
        for _ in range(50):
            probe.write(b"x" * 4096)
            started = time.perf_counter()
            probe.flush()
            os.fsync(probe.fileno())
            samples.append(time.perf_counter() - started)
    path.unlink()
    return (
        f"machine: sum(range(10**6)) {loop_ms:.1f} ms (best of 5); a 4 KiB write + fsync "
        f"{statistics.median(samples) * 1000:.2f} ms (median of 50)"
    )


@dataclass
class Settings:
    turns: int
    batches: int
    rounds: int  # lone-writer appends per contender
    rows: int
    repeats: int  # table-size probes per contender and state
    compaction_repeats: int


async def run_backend(
    label: str,
    contenders: list[Contender],
    sized: Callable[[], Awaitable[list[Sized]]],
    settings: Settings,
) -> None:
    print(f"\n=== {label} ===", flush=True)
    try:
        await throughput(contenders, settings.turns, settings.batches)
        report_latency(
            f"lone writer: append one turn (4 items), {settings.rounds} interleaved rounds "
            "(ours/this in ms, < 1.00x = ours faster)",
            await bench_append(contenders, settings.rounds),
        )
    finally:
        for c in contenders:
            await c.close()
    print(f"\ntable size, filling to {settings.rows:,} rows per contender", flush=True)
    table = await sized()
    try:
        await table_size(table, settings.rows, settings.repeats)
    finally:
        for s in table:
            await s.empty.close()
            await s.full.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer turns, 100k rows (smoke run)")
    parser.add_argument("--rows", type=int, help="rows of the full table (default 1,000,000)")
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    settings = (
        Settings(turns=64, batches=10, rounds=60, rows=100_000, repeats=40, compaction_repeats=2)
        if args.quick
        else Settings(
            turns=640, batches=50, rounds=300, rows=1_000_000, repeats=200, compaction_repeats=5
        )
    )
    if args.rows:
        settings.rows = args.rows
    if settings.rows < 2 * PROBES * len(BATCH):
        parser.error(f"--rows must be at least {2 * PROBES * len(BATCH):,}")
    started = time.perf_counter()
    print("sessionstore scale benchmark (ratios: ours/theirs; see each section for direction)")
    with tempfile.TemporaryDirectory() as folder:
        print(machine_line(Path(folder)), flush=True)
    backends = set(args.backends.split(","))
    if "sqlite" in backends:
        with tempfile.TemporaryDirectory() as folder:
            workdir = Path(folder)
            contenders = [
                await ours(f"sqlite:///{workdir / 'ours.db'}"),
                await sdk_sqlite(workdir / "sdk.db"),
                await sdk_sqlalchemy(f"sqlite+aiosqlite:///{workdir / 'sdk_sqla.db'}"),
            ]
            big = f"sqlite:///{workdir / 'size-ours.db'}"

            async def sqlite_sized() -> list[Sized]:
                def sqla(name: str) -> str:
                    return f"sqlite+aiosqlite:///{workdir / name}"

                mine, theirs = await ours(big), await sdk_sqlalchemy(sqla("size-sqla.db"))
                return [
                    Sized(
                        await ours(f"sqlite:///{workdir / 'small-ours.db'}"),
                        mine,
                        session_filler(mine),
                    ),
                    Sized(
                        await sdk_sqlite(workdir / "small-sdk.db"),
                        await sdk_sqlite(workdir / "size-sdk.db"),
                        sdk_sqlite_filler(workdir / "size-sdk.db"),
                    ),
                    Sized(
                        await sdk_sqlalchemy(sqla("small-sqla.db")), theirs, session_filler(theirs)
                    ),
                ]

            await run_backend("SQLite (synchronous=FULL)", contenders, sqlite_sized, settings)
            del contenders  # closed: section 5 runs without their objects
            await our_costs(big, settings)
    if "postgresql" in backends:
        async with (
            scratch_database() as url,
            scratch_database() as small,
            scratch_database() as big,
        ):

            async def pg_sized() -> list[Sized]:
                mine, theirs = await ours(big), await sdk_sqlalchemy(big)
                return [
                    Sized(await ours(small), mine, session_filler(mine)),
                    Sized(await sdk_sqlalchemy(small), theirs, session_filler(theirs)),
                ]

            contenders = [await ours(url), await sdk_sqlalchemy(url)]
            await run_backend("PostgreSQL", contenders, pg_sized, settings)
            del contenders
            await our_costs(big, settings)
    elapsed = time.perf_counter() - started
    print(f"\nwhole run: {elapsed // 60:.0f} min {elapsed % 60:.0f} s")


if __name__ == "__main__":
    asyncio.run(main())
