"""The first write on a new SQLite file: ours against the SDK's SQLiteSession and
SQLAlchemySession, and what creating our schema costs, in one run.

A first write pays for creating the file and its schema. Each figure is the median (and the
slowest) of `--runs` new files:

- cold: a fresh interpreter per file (imports done before the clock starts), so the first
  use of everything a store loads lazily (Alembic, the migration scripts, the tokenizer) counts;
- warm: a new file in a process that has already opened one.

"ours-chain" is our store made to take the new file through the migration chain, as every
store did before issue #39: the before and after of one run.

"schema" times only the creation of the schema on a new file: through the migration chain
(what every store did before 0.1's head schema, and still does for a database at an older
revision) and built directly at head (`sessionstore/_head_schema.py`).

    python bench/bench_first_write.py              # 7 files per figure
    python bench/bench_first_write.py --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from agents import TResponseInputItem

ITEM = cast("TResponseInputItem", {"role": "user", "content": "hello"})
KINDS = ("ours", "ours-chain", "sdk-sqlite", "sdk-sqlalchemy")


@contextmanager
def through_the_chain(really: bool) -> Iterator[None]:
    """Stores take a new file through the migration chain, as all did before issue #39 (the
    bench's "before"; the code keeps the chain for databases at older revisions)."""
    from sessionstore._storage import _migrations

    kept = _migrations.created_at_head
    if really:
        _migrations.created_at_head = lambda connection, head: False
    try:
        yield
    finally:
        _migrations.created_at_head = kept


async def first_write(kind: str, path: Path) -> float:
    """Seconds from opening a store on the new file `path` to its first append returning."""
    from agents import SQLiteSession
    from agents.extensions.memory import SQLAlchemySession

    from sessionstore import SQLSession

    start = time.perf_counter()
    if kind.startswith("ours"):
        with through_the_chain(kind == "ours-chain"):
            ours = SQLSession.from_url("s", url=f"sqlite:///{path}", create_tables=True)
            await ours.add_items([ITEM])
            elapsed = time.perf_counter() - start
        await ours.close()
    elif kind == "sdk-sqlite":
        sqlite = SQLiteSession("s", str(path))
        await sqlite.add_items([ITEM])
        elapsed = time.perf_counter() - start
        sqlite.close()
    else:
        url = f"sqlite+aiosqlite:///{path}"
        alchemy = SQLAlchemySession.from_url("s", url=url, create_tables=True)
        await alchemy.add_items([ITEM])
        elapsed = time.perf_counter() - start
        await alchemy.engine.dispose()
    return elapsed


async def schema_creation(path: Path, *, chain: bool) -> float:
    """Seconds to bring the new file `path` to head: the migration chain, or the head schema."""
    from sessionstore._storage._database import open_database
    from sessionstore._storage._migrations import ensure_schema, upgrade_through_chain
    from sessionstore._storage._urls import resolve_url

    database = open_database(resolve_url(f"sqlite:///{path}"))
    try:
        await database.read(lambda conn: None)  # the file and its connections exist already
        start = time.perf_counter()
        if chain:
            await upgrade_through_chain(database)
        else:
            await ensure_schema(database, create=True, url_hint=str(path))
        return time.perf_counter() - start
    finally:
        await database.dispose()


def cold(kind: str, folder: Path) -> float:
    """One first write in a fresh interpreter (its imports are not timed)."""
    path = folder / f"cold-{kind}-{time.monotonic_ns()}.db"
    out = subprocess.run(
        [sys.executable, __file__, "--one", kind, str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def warm(measure: Callable[[Path], Awaitable[float]], folder: Path, runs: int) -> list[float]:
    """`runs` measurements on new files in this process, after one that is not counted."""

    async def all_of_them() -> list[float]:
        await measure(folder / f"warmup-{time.monotonic_ns()}.db")
        return [await measure(folder / f"warm-{n}-{time.monotonic_ns()}.db") for n in range(runs)]

    return asyncio.run(all_of_them())


def show(label: str, seconds: list[float]) -> None:
    median, worst = statistics.median(seconds) * 1000, max(seconds) * 1000
    print(f"{label:<46} {median:8.1f} ms  (slowest {worst:6.1f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--one", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # a child measuring one cold first write
        import agents  # noqa: F401  (imports are not what is measured)

        import sessionstore  # noqa: F401

        print(asyncio.run(first_write(args.one[0], Path(args.one[1]))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print(f"first write on a new SQLite file, median of {args.runs} files")
        for kind in KINDS:
            show(f"{kind}: cold process", [cold(kind, folder) for _ in range(args.runs)])
        for kind in KINDS:
            show(f"{kind}: warm process", warm(partial(first_write, kind), folder, args.runs))
        print("creating our schema on a new file (warm process)")
        chain = partial(schema_creation, chain=True)
        show("migration chain (0001 -> head)", warm(chain, folder, args.runs))
        direct = partial(schema_creation, chain=False)
        show("store's path (ensure_schema)", warm(direct, folder, args.runs))


if __name__ == "__main__":
    main()
