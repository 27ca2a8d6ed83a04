"""Stores whose first write lands on one new SQLite file at the same moment, as the Agents
SDK's own `test_add_items_concurrent_first_access_across_from_url_sessions_cross_loop` does:
each opens `SQLSession.from_url(..., create_tables=True)` with the default busy timeout,
waits for the others, and appends. Every write must succeed, as with the SDK's classes.

It failed before (1 in 3 to 1 in 8 SDK runs): two connections switching a new file to WAL at
once are answered "database is locked" at once (`_sqlite_wal.py`), and a store's first write
waited behind another's whole migration chain. Several rounds on new files make the race
likely to show; the checks are outcomes, never times.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import pytest

from sessionstore import SQLSession, StoreTimeoutError
from sessionstore._storage._sqlite._wal import enter_wal
from tests.support.database import creations_and_sessions

ROUNDS = 8
PROCESS_ROUNDS = 1  # each process imports the SDK: seconds of CPU apiece
RESULT_TIMEOUT_S = 120  # a failure guard only: no answer by then means a hang


class _Barrier(Protocol):
    def wait(self, timeout: float | None = None) -> Any: ...


def first_write(url: str, start: _Barrier, n: int) -> str:
    """One store's first write after every store is open; its stored items, or its error."""

    async def run() -> str:
        session = SQLSession.from_url(f"s{n}", url=url, create_tables=True)
        try:
            start.wait(RESULT_TIMEOUT_S)
            await session.add_items([{"role": "user", "content": str(n)}])
            return " ".join(str(item.get("content")) for item in await session.get_items())
        finally:
            await session.close()

    try:
        return asyncio.run(run())
    except Exception as error:  # every outcome is reported, not only the first failure
        return f"{type(error).__name__}: {error}"


def _first_write_in_process(url: str, start: _Barrier, n: int, results: Any) -> None:
    results.put((n, first_write(url, start, n)))


def _new_file(tmp_path: Path, name: str) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / name}"


@pytest.mark.parametrize("stores", [2, 8])
def test_stores_in_threads_first_write_to_a_new_file_at_once(tmp_path: Path, stores: int) -> None:
    for round_ in range(ROUNDS):
        url = _new_file(tmp_path, f"threads-{round_}.db")
        start = threading.Barrier(stores)
        with ThreadPoolExecutor(stores) as pool:
            outcomes = list(pool.map(partial(first_write, url, start), range(stores)))
        assert outcomes == [str(n) for n in range(stores)], f"round {round_}"
        assert creations_and_sessions(url) == (1, stores)


def test_stores_in_processes_first_write_to_a_new_file_at_once(tmp_path: Path) -> None:
    processes_per_round = 4
    context = multiprocessing.get_context("spawn")
    for round_ in range(PROCESS_ROUNDS):
        url = _new_file(tmp_path, f"processes-{round_}.db")
        start, results = context.Barrier(processes_per_round), context.Queue()
        processes = [
            context.Process(target=_first_write_in_process, args=(url, start, n, results))
            for n in range(processes_per_round)
        ]
        for process in processes:
            process.start()
        outcomes = dict(results.get(timeout=RESULT_TIMEOUT_S) for _ in processes)
        for process in processes:
            process.join(RESULT_TIMEOUT_S)
        assert outcomes == {n: str(n) for n in range(processes_per_round)}, f"round {round_}"
        assert creations_and_sessions(url) == (1, processes_per_round)


@contextlib.contextmanager
def _held_exclusively(path: Path) -> Iterator[sqlite3.Connection]:
    """Another process's lock on a file not yet in WAL: no connection may switch it."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE elsewhere (x)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        yield holder
    finally:
        holder.close()


def _impatient_cursor(path: Path) -> sqlite3.Cursor:
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA busy_timeout = 20")
    return connection.cursor()


def test_a_wal_switch_refused_past_the_busy_timeout_is_tried_again(tmp_path: Path) -> None:
    path = tmp_path / "held.db"
    cursor = _impatient_cursor(path)
    outcome: list[BaseException | None] = []

    def switch() -> None:
        try:
            enter_wal(cursor, 60, str(path))
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    with _held_exclusively(path) as holder:
        switching = threading.Thread(target=switch)
        switching.start()
        switching.join(0.5)  # many busy timeouts while the lock cannot be had
        assert switching.is_alive() and outcome == []
        holder.execute("ROLLBACK")
        switching.join(RESULT_TIMEOUT_S)
    assert outcome == [None]
    assert cursor.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_wal_switch_refused_past_timeout_s_fails_clearly(tmp_path: Path) -> None:
    path = tmp_path / "held.db"
    refused = r"waited 0\.2 s to switch .*held\.db to WAL"
    with _held_exclusively(path), pytest.raises(StoreTimeoutError, match=refused):
        enter_wal(_impatient_cursor(path), 0.2, str(path))
