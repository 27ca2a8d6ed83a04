"""SQLite's full-text index off the append path (migration 0014): appends leave rows pending,
the writer indexes them once idle, past a backlog, or on close; a search never misses a row,
writable (it catches up first) or read-only (it matches the pending rows itself)."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sessionstore import SessionStore, SQLSession
from sessionstore._history import _search as search_module
from sessionstore._jobs._retention import RetentionAction, RetentionPolicy, run_retention
from sessionstore._storage._migrations import downgrade, upgrade
from sessionstore._storage._sqlite import _idle_indexing as idle_indexing
from sessionstore._storage._sqlite._search_index import index_pending, match_pending
from tests.support.database import age
from tests.support.histories import assistant, user
from tests.support.managers import small_window_manager


def _file(url: str) -> str:
    return url.removeprefix("sqlite:///")


def _progress(url: str) -> dict[str, int]:
    """Each session's indexed seq, and the rows the index holds, read by a separate client."""
    with sqlite3.connect(_file(url)) as conn:
        return dict(conn.execute("SELECT session_id, indexed_seq FROM message_search_progress"))


def _indexed_rows(url: str) -> list[tuple[str, int]]:
    with sqlite3.connect(_file(url)) as conn:
        return list(conn.execute("SELECT session_id, seq FROM message_search_rows ORDER BY 1, 2"))


async def _eventually(check: object, timeout_s: float = 20.0) -> None:
    """Wait until `check()` holds (the indexer runs on its own thread)."""
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the index never caught up"
        await asyncio.sleep(0.01)


async def _killed_writer(sqlite_url: str, session_id: str, text: str) -> None:
    """A process appends `text` and dies before its store indexes it (no close)."""
    script = textwrap.dedent(
        f"""
        import asyncio, os
        from sessionstore import SessionStore
        from sessionstore._storage._sqlite import _idle_indexing
        _idle_indexing.IDLE_S = 3600.0

        async def main():
            store = SessionStore({sqlite_url!r})
            await store.append({session_id!r}, [{{"role": "user", "content": {text!r}}}])
            os._exit(0)  # no close: the rows stay unindexed

        asyncio.run(main())
        """
    )
    await asyncio.to_thread(subprocess.run, [sys.executable, "-c", script], check=True, timeout=60)
    assert session_id not in _progress(sqlite_url)


@pytest.fixture
def never_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer never counts as idle: only a backlog, a close or a search indexes."""
    monkeypatch.setattr(idle_indexing, "IDLE_S", 3600.0)


async def test_an_append_leaves_its_rows_pending_and_a_search_still_finds_them(
    sqlite_url: str, never_idle: None
) -> None:
    async with SessionStore(sqlite_url) as store:
        await store.append("s", [user("the falcon lands at dawn"), assistant("noted")])
        assert _indexed_rows(sqlite_url) == [] and "s" not in _progress(sqlite_url)
        [hit] = await store.search("falcon dawn")
        assert (hit.session_id, hit.seq) == ("s", 1)
        assert _indexed_rows(sqlite_url) == [("s", 1), ("s", 2)]  # caught up by the search
        assert _progress(sqlite_url) == {"s": 2}


async def test_the_writer_indexes_once_idle(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(idle_indexing, "IDLE_S", 0.01)
    async with SessionStore(sqlite_url) as store:
        for n in range(3):
            await store.append(f"s{n}", [user(f"message {n}")])
        await _eventually(lambda: _progress(sqlite_url) == {"s0": 1, "s1": 1, "s2": 1})
        assert _indexed_rows(sqlite_url) == [("s0", 1), ("s1", 1), ("s2", 1)]


async def test_a_writer_that_never_idles_indexes_past_its_backlog(
    sqlite_url: str, never_idle: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(idle_indexing, "MAX_BACKLOG", 10)
    async with SessionStore(sqlite_url) as store:
        await store.append("s", [user(f"message {n}") for n in range(12)])
        await _eventually(lambda: _progress(sqlite_url).get("s") == 12)
        assert len(_indexed_rows(sqlite_url)) == 12


async def test_closing_the_store_indexes_what_is_pending(sqlite_url: str, never_idle: None) -> None:
    store = SessionStore(sqlite_url)
    await store.append("s", [user("closing time")])
    await store.clear("s")  # a write of another kind: nothing of it to index
    assert _indexed_rows(sqlite_url) == []
    await store.close()
    assert _indexed_rows(sqlite_url) == [("s", 1)] and _progress(sqlite_url) == {"s": 2}


async def test_a_read_only_search_finds_rows_a_killed_writer_never_indexed(
    sqlite_url: str,
) -> None:
    await _killed_writer(sqlite_url, "lost", "orphaned heron notes")
    assert _indexed_rows(sqlite_url) == []
    async with SessionStore(sqlite_url, read_only=True) as reader:
        [hit] = await reader.search("heron")
        assert (hit.session_id, hit.seq) == ("lost", 1)
        assert await reader.search("heron", session_id="other") == []
    assert _indexed_rows(sqlite_url) == []  # a read-only search writes nothing
    async with SessionStore(sqlite_url) as writer:
        assert [hit.seq for hit in await writer.search("orphaned heron")] == [1]
    assert _indexed_rows(sqlite_url) == [("lost", 1)]


async def test_indexed_and_pending_rows_rank_together(sqlite_url: str, never_idle: None) -> None:
    async with SessionStore(sqlite_url) as store:
        await store.append("a", [user("kestrel"), user("kestrel kestrel kestrel kestrel")])
        await store.search("kestrel")  # indexes a
        await store.append("b", [user("kestrel"), user("kestrel kestrel kestrel kestrel")])
        async with SessionStore(sqlite_url, read_only=True) as reader:
            hits = await reader.search("kestrel")
            assert sorted((hit.session_id, hit.seq) for hit in hits) == [
                ("a", 1),
                ("a", 2),
                ("b", 1),
                ("b", 2),
            ]
            assert len(await reader.search("kestrel", limit=3)) == 3
            assert {hit.session_id for hit in await reader.search("kestrel", session_id="b")} == {
                "b"
            }


async def test_rows_purged_or_deleted_before_indexing_are_never_indexed(
    sqlite_url: str, never_idle: None
) -> None:
    async with SessionStore(sqlite_url) as store:
        manager = small_window_manager(store)
        for n in range(6):
            await store.append("old", [user(f"fact {n}"), assistant(f"osprey {n} seen")])
        assert (await manager.compact("old", trigger="manual")).compacted
        await age(store, "old", datetime.now(UTC) - timedelta(days=30))
        policy = RetentionPolicy("purge", RetentionAction.PURGE_COMPACTED_PLAINTEXT, 7)
        await run_retention(store, policies=[policy])  # before anything of "old" was indexed
        await store.append("gone", [user("deleted osprey")])
        assert await store.delete_session("gone")
        await store.append("kept", [user("current osprey")])
        assert _indexed_rows(sqlite_url) == []
        hits = await store.search("osprey", limit=50)
    seqs = {(hit.session_id, hit.seq) for hit in hits}
    assert ("kept", 1) in seqs and not any(sid == "gone" for sid, _ in seqs)
    with sqlite3.connect(_file(sqlite_url)) as conn:
        plain = set(
            conn.execute(
                "SELECT session_id, seq FROM messages WHERE payload IS NOT NULL "
                "AND kind IN ('item', 'summary')"
            )
        )
    assert set(_indexed_rows(sqlite_url)) == plain  # the purged rows were never indexed
    assert "gone" not in _progress(sqlite_url)


async def test_0014_hands_pending_rows_back_to_a_trigger_on_downgrade_and_back(
    sqlite_url: str, never_idle: None
) -> None:
    store = SessionStore(sqlite_url)
    await store.append("a", [user("indexed puffin")])
    await store.search("puffin")  # a is indexed, b is left pending
    await store.append("b", [user("pending puffin"), assistant("ok")])
    database = store.database
    await downgrade(database, "0013")
    assert _indexed_rows(sqlite_url) == [("a", 1), ("b", 1), ("b", 2)]
    await store.append("c", [user("triggered puffin")])  # 0013's trigger indexes it at once
    assert ("c", 1) in _indexed_rows(sqlite_url)
    await upgrade(database)
    assert _progress(sqlite_url) == {"a": 1, "b": 2, "c": 1}
    assert {hit.session_id for hit in await store.search("puffin")} == {"a", "b", "c"}
    await store.close()


async def test_a_search_that_cannot_index_still_finds_pending_rows(
    sqlite_url: str, never_idle: None
) -> None:
    """Another process holds the write lock: the catch-up gives up, the search matches the
    pending rows itself."""
    async with SessionStore(sqlite_url, sqlite_busy_timeout_ms=50) as store:
        await store.append("s", [user("a locked lynx")])
        other = sqlite3.connect(_file(sqlite_url), isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # the file's write lock, held
        try:
            [hit] = await store.search("lynx")
            assert (hit.session_id, hit.seq) == ("s", 1)
            assert _indexed_rows(sqlite_url) == []
        finally:
            other.execute("ROLLBACK")
            other.close()
        await store.search("lynx")  # the lock is free: now it indexes
        assert _indexed_rows(sqlite_url) == [("s", 1)]


async def test_a_read_only_search_sees_a_row_another_process_indexes_meanwhile(
    sqlite_url: str, never_idle: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index and the pending rows are read in one snapshot: a row indexed by someone else
    between the two reads is found once, not lost between them."""
    async with SessionStore(sqlite_url) as store:
        await store.append("s", [user("a moving mango")])
        async with SessionStore(sqlite_url, read_only=True) as reader:
            real = match_pending

            def racing(conn: sqlite3.Connection, *args: Any) -> Any:
                other = sqlite3.connect(_file(sqlite_url), isolation_level=None)
                assert index_pending(other) == 1  # another process's indexer, right now
                other.close()
                return real(conn, *args)

            monkeypatch.setattr(search_module, "match_pending", racing)
            [hit] = await reader.search("mango")
            assert (hit.session_id, hit.seq) == ("s", 1)
        assert _indexed_rows(sqlite_url) == [("s", 1)]


async def test_a_store_indexes_what_a_killed_process_left_once_it_is_idle(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _killed_writer(sqlite_url, "lost", "forgotten falcon")
    monkeypatch.setattr(idle_indexing, "IDLE_S", 0.01)
    async with SessionStore(sqlite_url) as store:
        await store.append("other", [user("elsewhere")])  # writes only to another session
        await _eventually(lambda: _progress(sqlite_url) == {"lost": 1, "other": 1})


async def test_closing_indexes_what_a_killed_process_left(
    sqlite_url: str, never_idle: None
) -> None:
    await _killed_writer(sqlite_url, "lost", "forgotten falcon")
    async with SessionStore(sqlite_url) as store:
        await store.append("other", [user("elsewhere")])
    assert _indexed_rows(sqlite_url) == [("lost", 1), ("other", 1)]


def test_a_store_nobody_closes_leaves_no_thread_behind(sqlite_url: str) -> None:
    """As SDK users often write it: a store per request, never closed."""

    def request(n: int) -> None:
        session = SQLSession(f"user{n}", SessionStore(sqlite_url))
        asyncio.run(session.add_items([{"role": "user", "content": "hi"}]))

    before = {thread.ident for thread in threading.enumerate()}
    for n in range(3):
        request(n)
    deadline = time.monotonic() + 20
    while True:
        gc.collect()
        left = [t.name for t in threading.enumerate() if t.ident not in before]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert left == []


async def test_a_search_of_one_session_indexes_only_that_session(
    sqlite_url: str, never_idle: None
) -> None:
    """A session's search costs a lookup of that session, not a look at every session."""
    async with SessionStore(sqlite_url) as store:
        await store.append("a", [user("quiet quail")])
        await store.append("b", [user("quiet quail")])
        [hit] = await store.search("quail", session_id="a")
        assert hit.session_id == "a"
        assert _progress(sqlite_url) == {"a": 1}  # b is still pending
        assert {hit.session_id for hit in await store.search("quail")} == {"a", "b"}
        assert _progress(sqlite_url) == {"a": 1, "b": 1}


async def test_a_compaction_summary_and_an_append_with_originals_are_indexed_once_idle(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes through the general path (a compaction's commit, an append that archives a
    truncated original) tell the indexer which session they wrote, like the hot path."""
    monkeypatch.setattr(idle_indexing, "IDLE_S", 0.01)
    async with SessionStore(sqlite_url) as store:
        manager = small_window_manager(store)
        for n in range(6):
            await store.append("c", [user(f"fact {n}"), assistant(f"marmoset {n} noted")])
        await _eventually(lambda: _progress(sqlite_url).get("c") == 12)
        assert (await manager.compact("c", trigger="manual")).compacted
        info = await store.session_info("c")
        assert info is not None
        await _eventually(lambda: _progress(sqlite_url).get("c") == info.last_seq)
        original = {"role": "user", "content": "the whole zebra " * 50}
        await store.append("o", [{"role": "user", "content": "a zebra"}], originals={0: original})
        await _eventually(lambda: _progress(sqlite_url).get("o") == 1)
    with sqlite3.connect(_file(sqlite_url)) as conn:
        summaries = set(conn.execute("SELECT session_id, seq FROM messages WHERE kind = 'summary'"))
    assert summaries and summaries <= set(_indexed_rows(sqlite_url))
