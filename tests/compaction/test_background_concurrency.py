"""Background compaction under concurrency: appends racing the commit of a prepared summary
(tasks and a thread with its own loop), and two real processes sharing one SQLite file."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import SessionStore
from sessionstore._items import text_of
from sessionstore._rows import visible_rows
from sessionstore._schema import KIND_ITEM
from tests.support.background import (
    SlowSummarizer,
    background_manager,
    fill_between,
    prepare,
)
from tests.support.background_worker import CRASH_EXIT
from tests.support.histories import turns, user
from tests.support.paths import REPO_ROOT

OUTCOMES = ("compact.prepared_committed", "compact.prepared_discarded")


async def _scalar(store: SessionStore, sql: str, **params: Any) -> Any:
    async with store.engine.connect() as conn:
        return (await conn.execute(sa.text(sql), params)).scalar_one()


async def _count(store: SessionStore, session_id: str, event: str) -> int:
    return int(
        await _scalar(
            store,
            "SELECT count(*) FROM events WHERE session_id = :s AND event = :e",
            s=session_id,
            e=event,
        )
    )


async def _archived(store: SessionStore, session_id: str) -> set[int]:
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT first_seq, last_seq FROM archive_ranges WHERE session_id = :s"),
            {"s": session_id},
        )
        return {seq for first, last in rows for seq in range(int(first), int(last) + 1)}


async def _append_batches(store: SessionStore, session_id: str, tag: str, sizes: list[int]) -> None:
    manager = background_manager(store, enabled=False)
    for number, size in enumerate(sizes):
        await manager.append(session_id, [user(f"{tag}-{number}-{i}") for i in range(size)])
        await asyncio.sleep(0)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    in_tasks=st.lists(st.integers(1, 3), min_size=1, max_size=5),
    in_thread=st.lists(st.integers(1, 3), max_size=3),
    move=st.sampled_from(["none", "clear", "compaction"]),
)
async def test_appends_racing_a_prepared_commit_lose_nothing(
    db_url: str, in_tasks: list[int], in_thread: list[int], move: str
) -> None:
    """Whether the prepared summary is committed or discarded while appends land from tasks
    and from another thread: seqs stay gapless, the chain verifies, every item appended is
    in the context exactly once or archived, late items keep their order, and the stored
    totals agree with a reload."""
    sid = f"p{uuid.uuid4().hex[:10]}"
    async with SessionStore(db_url, create_tables=True) as store:
        slow = SlowSummarizer(store.estimator)
        manager = background_manager(store, slow)
        await fill_between(manager, sid)
        await prepare(manager, sid)
        if move == "clear":
            await store.clear(sid)
            await manager.append(sid, turns(8, seed=50))
        elif move == "compaction":
            await background_manager(store, enabled=False).compact(sid, trigger="manual")
            await manager.append(sid, turns(2, seed=50))
        await asyncio.gather(
            manager.compact(sid, trigger="threshold"),
            _append_batches(store, sid, "task", in_tasks),
            asyncio.to_thread(asyncio.run, _append_batches(store, sid, "thread", in_thread)),
        )

        assert sum([await _count(store, sid, event) for event in OUTCOMES]) == 1
        history = await store.history(sid)
        assert [row.seq for row in history] == list(range(1, len(history) + 1))
        assert (await store.verify_history(sid)).ok
        context = await store.load_context(sid)
        texts = [text_of(item) for item in context]
        archived = await _archived(store, sid)
        for tag, sizes in (("task", in_tasks), ("thread", in_thread)):
            expected = [f"{tag}-{n}-{i}" for n, size in enumerate(sizes) for i in range(size)]
            present = [text for text in texts if text in expected]
            assert len(present) == len(set(present)), "an item was duplicated"
            assert present == [text for text in expected if text in present], "reordered"
            originals = {
                text_of(row.item): row.seq
                for row in history
                if row.kind == KIND_ITEM and row.item and text_of(row.item) in expected
            }
            assert set(originals) == set(expected)
            lost = [t for t, seq in originals.items() if t not in present and seq not in archived]
            assert lost == [], "an item is neither in the context nor archived"
        rows = visible_rows(await store.context_rows(sid))
        assert await store.context_tokens(sid) == sum(row.tokens for row in rows)
        async with SessionStore(db_url) as reopened:
            assert await reopened.load_context(sid) == context


def _worker(url: str, session_id: str, mode: str, lease_s: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.background_worker",
            url,
            session_id,
            mode,
            str(lease_s),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _finished(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = await asyncio.to_thread(process.communicate, timeout=120)
    return process.returncode, out, err


async def test_two_processes_run_one_summarizer_for_a_session(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url, create_tables=True) as store:
        await fill_between(background_manager(store, enabled=False), "s")
    workers = [_worker(sqlite_url, "s", "prepare", 300.0) for _ in range(2)]
    results = [await _finished(worker) for worker in workers]
    assert [code for code, _, _ in results] == [0, 0], [err for _, _, err in results]
    reports = [json.loads(out) for _, out, _ in results]
    assert sum(report["calls"] for report in reports) == 1
    async with SessionStore(sqlite_url) as store:
        assert await _count(store, "s", "compact.prepared") == 1
        [preparer] = [report["holder"] for report in reports if report["calls"]]
        holder = await _scalar(store, "SELECT holder FROM compaction_leases WHERE session_id = 's'")
        assert holder == preparer


async def test_a_crash_mid_preparation_leaves_nothing_half_written(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url, create_tables=True) as store:
        await fill_between(background_manager(store, enabled=False), "s")
        before = await store.load_context("s")
        last_seq = (await store.history("s"))[-1].seq
    code, _, err = await _finished(_worker(sqlite_url, "s", "crash", 0.001))
    assert code == CRASH_EXIT, err
    async with SessionStore(sqlite_url) as store:
        prepared = await _scalar(
            store, "SELECT count(*) FROM compaction_leases WHERE prepared IS NOT NULL"
        )
        assert prepared == 0
        assert await _scalar(store, "SELECT count(*) FROM compactions") == 0
        assert await _count(store, "s", "compact.prepared") == 0
        assert await store.load_context("s") == before
        assert (await store.history("s"))[-1].seq == last_seq
        # The crashed holder's lease has expired: the next process takes it over.
        slow = SlowSummarizer(store.estimator)
        manager = background_manager(store, slow)
        await prepare(manager, "s")
        assert slow.calls == 1
        assert await _count(store, "s", "compact.lease_taken_over") == 1
        await manager.compact("s", trigger="threshold")
        assert slow.calls == 1 and await _count(store, "s", "compact.prepared_committed") == 1
