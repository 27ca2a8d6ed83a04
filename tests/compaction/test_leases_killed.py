"""A background-compaction lease whose holder was killed (SIGKILL, a real process) is taken
over once it expires, `lease_s` after it was granted, and nothing is lost (issue #34)."""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from sessionstore import SessionStore
from sessionstore._schema import compaction_leases, events
from sessionstore._times import as_utc
from tests.support.background import SlowSummarizer, background_manager, fill_between, prepare
from tests.support.background_worker import HOLDING
from tests.support.histories import user
from tests.support.paths import REPO_ROOT

LEASE_S = 4.0


def _holding_worker(url: str, session_id: str) -> subprocess.Popen[str]:
    """A real process that takes the lease and waits inside its summarizer; returned once
    it said it holds the lease."""
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.background_worker",
            url,
            session_id,
            "hang",
            str(LEASE_S),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    ready, _, _ = select.select([worker.stdout], [], [], 120)
    line = worker.stdout.readline().strip() if ready else ""
    if line != HOLDING:
        worker.kill()
        raise AssertionError(f"the worker never held the lease: {line!r} {worker.communicate()}")
    return worker


async def _lease(store: SessionStore, session_id: str) -> Any:
    async with store.engine.connect() as conn:
        query = sa.select(compaction_leases).where(compaction_leases.c.session_id == session_id)
        return (await conn.execute(query)).one()


async def _events(store: SessionStore, session_id: str, name: str) -> int:
    async with store.engine.connect() as conn:
        query = (
            sa.select(sa.func.count())
            .select_from(events)
            .where(events.c.session_id == session_id, events.c.event == name)
        )
        return int((await conn.execute(query)).scalar_one())


async def test_a_killed_holders_lease_is_taken_over_once_it_expires(db_url: str) -> None:
    sid = f"killed-{os.getpid()}"
    async with SessionStore(db_url) as store:
        await fill_between(background_manager(store, enabled=False), sid)
        worker = await asyncio.to_thread(_holding_worker, db_url, sid)
        held = await _lease(store, sid)
        # Written while the holder lives, then after it died: a takeover must keep both.
        plain = background_manager(store, enabled=False)
        await plain.append(sid, [user("written while the lease was held")])
        os.kill(worker.pid, signal.SIGKILL)
        assert await asyncio.to_thread(worker.wait) == -signal.SIGKILL
        await plain.append(sid, [user("written after its holder was killed")])
        expires = as_utc(held.expires_at)

        early = SlowSummarizer(store.estimator)
        await prepare(background_manager(store, early, lease_s=LEASE_S), sid)
        if datetime.now(UTC) < expires:  # it could not have been taken yet: it was held
            assert await _events(store, sid, "compact.lease_taken_over") == 0
            assert early.calls == 0 and (await _lease(store, sid)).holder == held.holder
        # lease_s after it was granted, the first try takes it over.
        await asyncio.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.05)
        slow = SlowSummarizer(store.estimator)
        taker = background_manager(store, slow, lease_s=LEASE_S)  # another process's, say
        started = time.time()
        await prepare(taker, sid)
        assert started >= expires.timestamp()
        assert await _events(store, sid, "compact.lease_taken_over") == 1
        assert slow.calls == 1 and (await _lease(store, sid)).holder != held.holder

        before = [row.item for row in await store.history(sid) if row.item is not None]
        outcome = await taker.compact(sid, trigger="threshold")
        assert outcome.compacted
        assert await _events(store, sid, "compact.prepared_committed") == 1
        history = await store.history(sid)
        assert [row.seq for row in history] == list(range(1, len(history) + 1))
        assert [row.item for row in history[: len(before)]] == before  # nothing rewritten
        context = await store.load_context(sid)
        for late in ("written while the lease was held", "written after its holder was killed"):
            assert user(late) in context  # kept verbatim as recent items
