"""One store shared by threads that each run their own event loop, on both backends.

This is how sync applications use the SDK: a web server's thread pool calling
`asyncio.run(...)` per request, `Runner.run_sync(...)` from worker threads, a
loop per test. Nothing loop-bound may leak from one loop into another.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message
from sqlalchemy.engine import make_url

from sessionstore import SessionStore, SQLSession
from tests.support.database import creations_and_sessions

THREADS = 8
WRITES = 10
JOIN_TIMEOUT_S = 120  # a failure guard only: a thread still alive after it means a hang


def _in_threads(count: int, work: Callable[[int], None]) -> list[BaseException]:
    """Run `work(n)` on `count` threads at once; return their errors; fail on a hang."""
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def run(n: int) -> None:
        start.wait()
        try:
            work(n)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT_S)
    assert not [thread.name for thread in threads if thread.is_alive()], "a thread never returned"
    return errors


def _history(store: SessionStore, session_id: str) -> list[tuple[int, Any]]:
    async def read() -> list[tuple[int, Any]]:
        return [(row.seq, row.item) for row in await store.history(session_id)]

    return asyncio.run(read())


def test_one_session_shared_by_threads_each_running_asyncio_run(db_url: str) -> None:
    store = SessionStore(db_url, create_tables=True)
    session = SQLSession("shared", store)

    def writer(n: int) -> None:
        for k in range(WRITES):
            asyncio.run(session.add_items([{"role": "user", "content": f"{n}:{k}"}]))

    assert _in_threads(THREADS, writer) == []
    rows = _history(store, "shared")
    assert [seq for seq, _ in rows] == list(range(1, THREADS * WRITES + 1))  # gapless
    contents = sorted(item["content"] for _, item in rows)
    assert contents == sorted(f"{n}:{k}" for n in range(THREADS) for k in range(WRITES))
    for n in range(THREADS):  # each thread's writes in its own order
        mine = [item["content"] for _, item in rows if item["content"].startswith(f"{n}:")]
        assert mine == [f"{n}:{k}" for k in range(WRITES)]
    asyncio.run(store.close())


def test_runner_run_sync_from_four_threads_on_four_sessions(db_url: str) -> None:
    store = SessionStore(db_url, create_tables=True)

    def chat(n: int) -> None:
        model = ScriptedModel([[assistant_message(f"answer {n}.{turn}")] for turn in range(3)])
        agent = Agent(name="assistant", instructions="Be brief.", model=model)
        session = SQLSession(f"user-{n}", store)
        for turn in range(3):
            result = Runner.run_sync(agent, f"question {n}.{turn}", session=session)
            assert result.final_output == f"answer {n}.{turn}"
        model.assert_complete()

    assert _in_threads(4, chat) == []
    for n in range(4):
        rows = _history(store, f"user-{n}")
        assert [seq for seq, _ in rows] == list(range(1, 7))
        assert [item.get("content") for _, item in rows][::2] == [
            f"question {n}.{turn}" for turn in range(3)
        ]
    asyncio.run(store.close())


def test_store_used_from_loop_a_then_loop_b_then_a_thread_again(db_url: str) -> None:
    store = SessionStore(db_url, create_tables=True)
    session = SQLSession("hop", store)

    async def add(text: str) -> list[Any]:
        await session.add_items([{"role": "user", "content": text}])
        return await session.get_items()

    in_a = threading.Thread(target=lambda: asyncio.run(add("a1")))
    in_a.start()
    in_a.join(JOIN_TIMEOUT_S)
    assert [item["content"] for item in asyncio.run(add("b1"))] == ["a1", "b1"]  # loop A is gone
    seen: list[Any] = []
    again = threading.Thread(target=lambda: seen.extend(asyncio.run(add("a2"))))
    again.start()
    again.join(JOIN_TIMEOUT_S)
    assert [item["content"] for item in seen] == ["a1", "b1", "a2"]
    asyncio.run(store.close())


def _our_connections(url: str) -> int:
    """Connections to the test database other than this probe's own."""

    async def count() -> int:
        dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        conn = await asyncpg.connect(dsn)
        try:
            value: int = await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return value
        finally:
            await conn.close()

    return asyncio.run(count())


def test_postgres_pools_close_with_their_event_loop(pg_url: str) -> None:
    store = SessionStore(pg_url)
    loops = store.database._loops  # type: ignore[union-attr]
    before = _our_connections(pg_url)

    async def use() -> int:
        await store.append("p", [{"role": "user", "content": "x"}])
        await store.load_context("p")
        return len(loops.existing())

    assert asyncio.run(use()) == 1  # one loop, one set of pools
    assert loops.existing() == []  # closed when asyncio.run shut its loop down ...
    assert _our_connections(pg_url) == before  # ... and their connections with them
    asyncio.run(store.close())


async def test_a_lock_wait_is_bounded_and_names_what_it_waited_for(sqlite_url: str) -> None:
    store = SessionStore(sqlite_url, timeout_s=0.2)
    async with store:
        await store._ready_lock.acquire(1)  # another task is checking the schema, for ever
        store._ready = False
        try:
            with pytest.raises(TimeoutError, match=r"waited 0\.2 s for the store's schema check"):
                await store.append("s", [{"role": "user", "content": "x"}])
        finally:
            store._ready_lock.release()
            store._ready = True


async def test_a_sqlite_write_lock_held_elsewhere_times_out_with_a_clear_error(
    tmp_path: Path,
) -> None:
    import sqlite3

    path = tmp_path / "locked.db"
    async with SessionStore(f"sqlite:///{path}", sqlite_busy_timeout_ms=200) as store:
        await store.append("s", [{"role": "user", "content": "before"}])
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(TimeoutError, match=r"waited 0\.2 s for the write lock") as caught:
                await store.append("s", [{"role": "user", "content": "blocked"}])
            assert str(path) in str(caught.value)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        await store.append("s", [{"role": "user", "content": "after"}])
        assert [i["content"] for i in await store.load_context("s")] == ["before", "after"]


# ---------------------------------------------------------- first use of a new file


def _first_write(url: str, n: int) -> dict[str, Any]:
    # What is shown is correctness (one migration, every write stored), not speed: on a loaded
    # CI machine fsyncs take seconds, and SQLite's busy wait is not fair, so a short busy
    # timeout would make this a timing test.
    async def write() -> None:
        async with SessionStore(url, create_tables=True, sqlite_busy_timeout_ms=30_000) as store:
            await store.append(f"s{n}", [{"role": "user", "content": str(n)}])

    try:
        asyncio.run(write())
    except Exception as error:
        return {"ok": False, "error": repr(error)}
    return {"ok": True}


def _process_first_write(url: str, n: int, start: Any, results: Any) -> None:
    start.wait()
    results.put(_first_write(url, n))


@pytest.mark.parametrize("stores", [2, 4])
def test_stores_in_threads_first_write_to_a_new_file_at_once(tmp_path: Path, stores: int) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    outcomes: list[dict[str, Any]] = []
    assert _in_threads(stores, lambda n: outcomes.append(_first_write(url, n))) == []
    assert outcomes == [{"ok": True}] * stores
    assert creations_and_sessions(url) == (1, stores)


@pytest.mark.parametrize("stores", [4])
def test_stores_in_processes_first_write_to_a_new_file_at_once(tmp_path: Path, stores: int) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(stores)
    results = context.Queue()
    processes = [
        context.Process(target=_process_first_write, args=(url, n, start, results))
        for n in range(stores)
    ]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=JOIN_TIMEOUT_S) for _ in processes]
    for process in processes:
        process.join(JOIN_TIMEOUT_S)
    assert outcomes == [{"ok": True}] * stores
    assert creations_and_sessions(url) == (1, stores)


async def test_a_pool_that_stays_busy_times_out_with_a_clear_error(pg_url: str) -> None:
    store = SessionStore(pg_url, timeout_s=0.3)
    await store.append("busy", [{"role": "user", "content": "warm"}])
    pool = await store.database._loops.current().pool()  # type: ignore[union-attr]
    held = [await pool.acquire() for _ in range(pool.get_max_size())]
    try:
        with pytest.raises(TimeoutError, match=r"waited 0\.3 s for a free connection"):
            await store.append("busy", [{"role": "user", "content": "blocked"}])
    finally:
        for conn in held:
            await pool.release(conn)
    await store.append("busy", [{"role": "user", "content": "after"}])
    assert [i["content"] for i in await store.load_context("busy")] == ["warm", "after"]
    await store.close()
