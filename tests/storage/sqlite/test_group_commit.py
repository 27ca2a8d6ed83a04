"""SQLite group commit: concurrent appends share transactions; each caller's batch is its own.

Real SQLite files, real threads and a real process killed with SIGKILL mid-stream.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sessionstore import SessionStore
from sessionstore._errors import StoreError
from sessionstore._items import describe
from sessionstore._rows import Batch
from sessionstore._storage._sqlite._database import SQLiteDatabase

WRITERS = 64
APPENDS = 8


def _turn(writer: int, n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"w{writer} question {n}"},
        {"role": "assistant", "content": f"w{writer} answer {n}"},
    ]


def _broken_batch(session_id: str) -> Batch:
    """A batch the database refuses (a negative token total breaks a CHECK constraint)."""
    item = {"role": "user", "content": "poison"}
    return Batch(session_id, [json.dumps(item)], [describe(item, {})], [-1], False, "x", "tok")


async def test_64_writers_with_failing_batches_lose_nothing_and_share_commits(
    sqlite_url: str,
) -> None:
    async with SessionStore(sqlite_url) as store:
        await store.ensure_ready()
        database = store.database
        assert isinstance(database, SQLiteDatabase)
        failures: list[BaseException] = []

        async def writer(w: int) -> None:
            for n in range(APPENDS):
                if (w + n) % 7 == 0:  # some callers send a batch the database refuses
                    with pytest.raises(StoreError) as caught:
                        await database.append_batch(_broken_batch(f"w{w}"), store.session_keys)
                    failures.append(caught.value)
                await store.append(f"w{w}", _turn(w, n))

        await asyncio.gather(*(writer(w) for w in range(WRITERS)))
        assert len(failures) == sum(
            (w + n) % 7 == 0 for w in range(WRITERS) for n in range(APPENDS)
        )
        for w in range(WRITERS):
            rows = await store.history(f"w{w}")
            assert [row.seq for row in rows] == list(range(1, 2 * APPENDS + 1))  # gapless
            expected = [item for n in range(APPENDS) for item in _turn(w, n)]
            assert [row.item for row in rows] == expected  # nothing lost, nothing of the poison
            info = await store.session_info(f"w{w}")
            assert info is not None and info.context_tokens == sum(row.tokens for row in rows)
        appends = WRITERS * APPENDS + len(failures)
        assert database._appends.transactions < appends  # batched: fewer commits than appends


async def test_one_refused_batch_among_queued_ones_fails_alone_in_their_shared_commit(
    sqlite_url: str,
) -> None:
    """Batches queued behind a busy writer share one transaction; the refused one in their
    midst fails alone (the transaction is replayed with a savepoint per batch)."""
    async with SessionStore(sqlite_url) as store:
        await store.ensure_ready()
        database = store.database
        assert isinstance(database, SQLiteDatabase)
        gate = threading.Event()
        busy = asyncio.ensure_future(database.write(lambda conn: gate.wait(30)))
        await asyncio.sleep(0.05)  # the writer thread is now held by the gated write
        before = database._appends.transactions
        calls = [store.append(f"q{n}", _turn(n, 0)) for n in range(3)]
        calls.insert(1, database.append_batch(_broken_batch("q-poison"), store.session_keys))
        outcomes = asyncio.gather(*calls, return_exceptions=True)
        await asyncio.sleep(0.05)  # all four are queued behind the gate
        gate.set()
        first, refused, second, third = await outcomes
        await busy
        assert isinstance(refused, StoreError)
        assert [first, second, third] == [[1, 2], [1, 2], [1, 2]]
        assert database._appends.transactions == before + 1  # one shared commit
        for n in range(3):
            assert [row.item for row in await store.history(f"q{n}")] == _turn(n, 0)
        assert await store.history("q-poison") == []


def test_writers_in_threads_share_commits_and_keep_every_invariant(sqlite_url: str) -> None:
    store = SessionStore(sqlite_url)

    def thread(w: int) -> None:
        async def run() -> None:
            for n in range(APPENDS):
                await store.append(f"t{w}", _turn(w, n))

        asyncio.run(run())

    threads = [threading.Thread(target=thread, args=(w,)) for w in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)

    async def check() -> None:
        for w in range(16):
            rows = await store.history(f"t{w}")
            assert [row.item for row in rows] == [i for n in range(APPENDS) for i in _turn(w, n)]
            assert [row.seq for row in rows] == list(range(1, 2 * APPENDS + 1))
        await store.close()

    asyncio.run(check())


WRITER_PROCESS = textwrap.dedent(
    """
    import asyncio, sys
    from sessionstore import SessionStore

    async def main(url):
        async with SessionStore(url) as store:
            async def writer(w):
                for n in range(100_000):
                    batch = [{"role": "user", "content": f"{w}:{n}:{k}"} for k in range(3)]
                    await store.append(f"p{w}", batch)
                    print(f"{w}:{n}", flush=True)
            await asyncio.gather(*(writer(w) for w in range(16)))

    asyncio.run(main(sys.argv[1]))
    """
)


def test_a_writer_killed_mid_batch_leaves_whole_acknowledged_batches_only(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    asyncio.run(SessionStore(url).ensure_ready())
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER_PROCESS, url], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    acknowledged: set[str] = set()
    deadline = time.monotonic() + 60  # a failure guard, not a timing assertion
    while len(acknowledged) < 400 and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        acknowledged.add(line.strip())
    os.kill(process.pid, signal.SIGKILL)  # mid-stream: batches are queued and in flight
    process.wait(30)
    assert len(acknowledged) >= 400

    async def stored() -> dict[str, list[Any]]:
        async with SessionStore(url) as store:
            return {f"p{w}": await store.history(f"p{w}") for w in range(16)}

    sessions = asyncio.run(stored())
    batches: set[str] = set()
    for rows in sessions.values():
        assert [row.seq for row in rows] == list(range(1, len(rows) + 1))
        assert len(rows) % 3 == 0  # whole batches only
        texts = [row.item["content"] for row in rows]
        for start in range(0, len(texts), 3):
            w, n, _ = texts[start].split(":")
            assert texts[start : start + 3] == [f"{w}:{n}:{k}" for k in range(3)]
            batches.add(f"{w}:{n}")
    assert acknowledged <= batches  # every acknowledged batch survived the kill
