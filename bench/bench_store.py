"""Store benchmark: ours vs the SDK's own session stores vs the raw driver, in one run.

Every contender gets the same synthetic turns (a user message, a function call,
its output, an assistant message). Contenders are interleaved round by round so
machine noise hits them alike, and medians are reported with ratios ours/anchor.

    python bench/bench_store.py                # SQLite and PostgreSQL
    python bench/bench_store.py --quick        # fewer rounds, smaller sessions
    python bench/bench_store.py --backends sqlite

PostgreSQL: $SESSIONSTORE_BENCH_PG_URL (default postgresql://postgres@127.0.0.1:5432/postgres);
scratch databases are created and dropped. `sessionstore+verify` is our store with
verify_on_load=True: every load proven against the session's hash chain (its cost).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
from agents import SQLiteSession
from agents.extensions.memory import SQLAlchemySession
from scratch_pg import scratch_database
from sqlalchemy.engine import make_url

from sessionstore import SessionStore, SQLSession

Item = dict[str, Any]
T = TypeVar("T")
SIZES = (100, 1_000, 10_000)


def turn(n: int) -> list[Item]:
    """One synthetic agent turn: user message, function call, its output, assistant reply."""
    call_id = f"call_{n}"
    return [
        {"role": "user", "content": f"Turn {n}: please check the build status of branch feat-{n}."},
        {
            "type": "function_call",
            "name": "ci_status",
            "call_id": call_id,
            "arguments": json.dumps({"branch": f"feat-{n}", "verbose": True}),
        },
        {
            "type": "function_call_output",
            "call_id": call_id,
            "output": f"build #{n}: 412 tests passed, 0 failed, coverage 91%. " * 3,
        },
        {
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": f"Branch feat-{n} is green: all 412 tests pass."}
            ],
        },
    ]


@dataclass
class Contender:
    """A named store with the two operations we time."""

    name: str
    add_items: Callable[[str, list[Item]], Awaitable[None]]
    get_items: Callable[[str], Awaitable[list[Any]]]
    close: Callable[[], Awaitable[None]]
    # A new session object for a session id (None: the contender has none). add_items and
    # get_items keep one per id; bench_scale's fill makes one per batch instead, so 10,000
    # sessions' objects are not kept alive for the rest of the run.
    make: Callable[[str], Any] | None = None
    # Work the contender defers past its calls (ours: the full-text index of appended rows,
    # done once its writer idles): bench_scale runs it after each of this contender's timed
    # rounds, so it neither lands in another contender's timing nor goes unreported.
    settle: Callable[[], Awaitable[object]] | None = None


async def settled(contender: Contender) -> float:
    """Run the work `contender` deferred past its timed calls now (see Contender.settle);
    the seconds it took."""
    if contender.settle is None:
        return 0.0
    started = time.perf_counter()
    await contender.settle()
    return time.perf_counter() - started


def _sdk_session_contender(name: str, make: Callable[[str], Any], close: Any) -> Contender:
    sessions: dict[str, Any] = {}

    def session(sid: str) -> Any:
        if sid not in sessions:
            sessions[sid] = make(sid)
        return sessions[sid]

    async def add(sid: str, items: list[Item]) -> None:
        await session(sid).add_items(items)

    async def get(sid: str) -> list[Any]:
        return list(await session(sid).get_items())

    return Contender(name, add, get, close, make)


async def ours(url: str, *, verify_on_load: bool = False) -> Contender:
    """Our store; with `verify_on_load` every load is proven against the session's chain."""
    store = SessionStore(url, create_tables=True, verify_on_load=verify_on_load)
    await store.ensure_ready()
    name = "sessionstore+verify" if verify_on_load else "sessionstore"
    contender = _sdk_session_contender(name, lambda sid: SQLSession(sid, store), store.close)
    if store.database.dialect == "sqlite":  # PostgreSQL indexes inside the append
        contender.settle = store.database.catch_up_search_index
    return contender


async def sdk_sqlite(path: Path) -> Contender:
    opened: list[SQLiteSession] = []

    def make(sid: str) -> SQLiteSession:
        opened.append(SQLiteSession(sid, str(path)))
        return opened[-1]

    async def close() -> None:
        for session in opened:
            session.close()

    return _sdk_session_contender("SDK SQLiteSession", make, close)


async def sdk_sqlalchemy(url: str) -> Contender:
    first = SQLAlchemySession.from_url("warmup", url=url, create_tables=True)
    await first.get_items()
    engine = first.engine

    async def close() -> None:
        await engine.dispose()

    return _sdk_session_contender(
        "SDK SQLAlchemySession",
        lambda sid: SQLAlchemySession(sid, engine=engine, create_tables=False),
        close,
    )


async def raw_sqlite(path: Path, our_db: Path) -> Contender:
    """The floor: sqlite3 in one worker-thread hop, same durability (WAL, synchronous=FULL)."""
    con = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=FULL")
    con.execute("CREATE TABLE IF NOT EXISTS raw (session_id TEXT, seq INTEGER, data TEXT)")
    con.execute("CREATE INDEX IF NOT EXISTS raw_idx ON raw (session_id, seq)")
    reader = sqlite3.connect(our_db, check_same_thread=False)
    seqs: dict[str, int] = {}

    def add_sync(sid: str, items: list[Item]) -> None:
        start = seqs.get(sid, 0)
        con.execute("BEGIN IMMEDIATE")
        con.executemany(
            "INSERT INTO raw VALUES (?, ?, ?)",
            [(sid, start + i, json.dumps(item)) for i, item in enumerate(items, 1)],
        )
        con.execute("COMMIT")
        seqs[sid] = start + len(items)

    def get_sync(sid: str) -> list[Any]:
        # The same rows ours returns, read straight from our table by the raw driver.
        rows = reader.execute(
            "SELECT payload FROM messages WHERE session_id = ? AND seq >= 1 ORDER BY seq", (sid,)
        ).fetchall()
        return [json.loads(row[0]) for row in rows]

    async def add(sid: str, items: list[Item]) -> None:
        await asyncio.to_thread(add_sync, sid, items)

    async def get(sid: str) -> list[Any]:
        return await asyncio.to_thread(get_sync, sid)

    async def close() -> None:
        con.close()
        reader.close()

    return Contender("raw sqlite3", add, get, close)


async def raw_asyncpg(dsn: str) -> Contender:
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=4)
    async with pool.acquire() as conn:
        await conn.execute("CREATE TABLE IF NOT EXISTS raw (session_id TEXT, seq INT, data JSON)")
        await conn.execute("CREATE INDEX IF NOT EXISTS raw_idx ON raw (session_id, seq)")
    seqs: dict[str, int] = {}

    async def add(sid: str, items: list[Item]) -> None:
        start = seqs.get(sid, 0)
        async with pool.acquire() as conn, conn.transaction():
            await conn.executemany(
                "INSERT INTO raw VALUES ($1, $2, $3)",
                [(sid, start + i, json.dumps(item)) for i, item in enumerate(items, 1)],
            )
        seqs[sid] = start + len(items)

    async def get(sid: str) -> list[Any]:
        async with pool.acquire() as conn:
            rows = await conn.fetch(
                "SELECT payload FROM messages WHERE session_id = $1 AND seq >= 1 ORDER BY seq",
                sid,
            )
        return [json.loads(row[0]) for row in rows]

    async def close() -> None:
        await pool.close()

    return Contender("raw asyncpg", add, get, close)


async def _timed(call: Awaitable[Any]) -> float:
    """Latency of one call in ms; GC runs before, not during, so no contender pays for another."""
    gc.collect(1)  # young generations only: cheap, and set-up objects are frozen
    gc.disable()
    try:
        start = time.perf_counter_ns()
        await call
        return (time.perf_counter_ns() - start) / 1e6
    finally:
        gc.enable()


def _rotated(contenders: Sequence[T], n: int) -> list[T]:
    """Each round starts with a different contender, so position effects cancel out."""
    k = n % len(contenders)
    return [*contenders[k:], *contenders[:k]]


async def bench_append(contenders: Sequence[Contender], rounds: int) -> dict[str, list[float]]:
    """Per-turn append latency (ms); contenders take turns each round."""
    samples: dict[str, list[float]] = {c.name: [] for c in contenders}
    for warm in range(5):
        for c in contenders:
            await c.add_items("append-warmup", turn(warm))
    for n in range(rounds):
        for c in _rotated(contenders, n):
            samples[c.name].append(await _timed(c.add_items("append", turn(n))))
    return samples


async def bench_get(
    contenders: Sequence[Contender], size: int, repeats: int
) -> dict[str, list[float]]:
    """get_items latency (ms) on a session holding `size` items."""
    sid = f"get-{size}"
    batch = [item for n in range(25) for item in turn(n)]  # 100 items per add
    for c in contenders:
        for _ in range(size // len(batch)):
            await c.add_items(sid, batch)
        assert len(await c.get_items(sid)) == size, c.name
    for c in contenders:  # what they deferred (our search index) runs now, not in the timing
        await settled(c)
    gc.collect()
    gc.freeze()
    samples: dict[str, list[float]] = {c.name: [] for c in contenders}
    for n in range(repeats):
        for c in _rotated(contenders, n):
            samples[c.name].append(await _timed(c.get_items(sid)))
    return samples


def _report(title: str, samples: dict[str, list[float]], ours_name: str = "sessionstore") -> None:
    ours_median = statistics.median(samples[ours_name])
    print(f"\n{title}", flush=True)
    print(f"  {'contender':<24}{'median ms':>11}{'p90 ms':>10}{'ours/this':>11}")
    for name, values in samples.items():
        median = statistics.median(values)
        p90 = sorted(values)[math.ceil(0.9 * len(values)) - 1]
        ratio = "" if name == ours_name else f"{ours_median / median:>10.2f}x"
        print(f"  {name:<24}{median:>11.3f}{p90:>10.3f}{ratio:>11}")


async def run_backend(
    label: str, contenders: list[Contender], rounds: int, repeats: dict[int, int]
) -> None:
    print(f"\n=== {label} ===")
    _report(f"append, one turn (4 items); {rounds} rounds", await bench_append(contenders, rounds))
    for size in SIZES:
        samples = await bench_get(contenders, size, repeats[size])
        _report(f"get_items, {size:,} items; {repeats[size]} repeats", samples)
    for c in contenders:
        await c.close()


async def sqlite_contenders(workdir: Path) -> list[Contender]:
    our_db = workdir / "ours.db"
    return [
        await ours(f"sqlite:///{our_db}"),
        await ours(f"sqlite:///{workdir / 'verified.db'}", verify_on_load=True),
        await sdk_sqlite(workdir / "sdk.db"),
        await sdk_sqlalchemy(f"sqlite+aiosqlite:///{workdir / 'sdk_sqla.db'}"),
        await raw_sqlite(workdir / "raw.db", our_db),
    ]


async def postgres_contenders(url: str, verified_url: str) -> list[Contender]:
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    return [
        await ours(url),
        await ours(verified_url, verify_on_load=True),
        await sdk_sqlalchemy(url),
        await raw_asyncpg(dsn),
    ]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke run)")
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    rounds = 60 if args.quick else 300
    repeats = {100: 10, 1_000: 5, 10_000: 2} if args.quick else {100: 60, 1_000: 30, 10_000: 9}
    sizes_note = "ratios > 1.00x mean ours is slower; < 1.00x means ours is faster"
    print(f"sessionstore store benchmark ({sizes_note})")
    backends = set(args.backends.split(","))
    if "sqlite" in backends:
        with tempfile.TemporaryDirectory() as workdir:
            await run_backend("SQLite", await sqlite_contenders(Path(workdir)), rounds, repeats)
    if "postgresql" in backends:
        async with scratch_database() as url, scratch_database() as verified_url:
            contenders = await postgres_contenders(url, verified_url)
            await run_backend("PostgreSQL", contenders, rounds, repeats)


if __name__ == "__main__":
    asyncio.run(main())
