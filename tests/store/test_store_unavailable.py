"""A database that goes away mid-write: known outcomes, safe retries, only our errors.

A killer connection terminates every other backend of the test database while eight
writers append. Acknowledged appends must all be there; a retry with the batch's
idempotency token must never store it twice; nothing but the store's own error types
may reach the caller (no driver types, no SQL text).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter
from typing import Any

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from sessionstore import SessionStore, SQLSession
from sessionstore._errors import StoreUnavailableError
from tests.support.pg_proxy import pg_proxy

WRITERS = 8
APPENDS = 60
KILLS = 80  # backends terminated per storm (then the storm ends, so every writer finishes)
MAX_ATTEMPTS = 2_000  # a failure guard: a writer that never gets through fails the test


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@contextlib.asynccontextmanager
async def _terminating_backends(url: str, every_s: float = 0.01) -> Any:
    """Terminate other connections to the database, one every `every_s`, KILLS in all."""
    stop = asyncio.Event()
    killed = Counter[str]()
    conn = await asyncpg.connect(_dsn(url))

    async def kill() -> None:
        while not stop.is_set() and killed["backends"] < KILLS:
            count = await conn.fetchval(  # one backend at a time, at random
                "SELECT count(pg_terminate_backend(pid)) FROM (SELECT pid FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "ORDER BY random() LIMIT 1) AS victim"
            )
            killed["backends"] += count
            await asyncio.sleep(every_s)

    task = asyncio.create_task(kill())
    try:
        yield killed
    finally:
        stop.set()
        await task
        await conn.close()


def _texts(rows: list[Any]) -> list[str]:
    return [row.item["content"] for row in rows if row.item is not None]


async def test_terminated_backends_lose_nothing_acknowledged_and_duplicate_nothing(
    pg_url: str,
) -> None:
    store = SessionStore(pg_url, timeout_s=10)
    await store.ensure_ready()
    outcomes = Counter[str]()
    run = uuid.uuid4().hex[:8]  # pg_url is shared by the tests of this worker

    async def writer(w: int) -> None:
        for k in range(APPENDS):
            item = {"role": "user", "content": f"{w}:{k}"}
            token = None
            for _ in range(MAX_ATTEMPTS):
                try:
                    await store.append(f"{run}-w{w}", [item, {**item, "n": 2}], token=token)
                    break
                except StoreUnavailableError as error:
                    outcomes["known" if error.outcome_known else "unknown"] += 1
                    assert error.token is not None
                    assert "SELECT" not in str(error) and "INSERT" not in str(error)
                    token = error.token  # retry the same batch: stored at most once
                    await asyncio.sleep(0.005)
            else:
                pytest.fail(f"writer {w} never got append {k} through")

    async with _terminating_backends(pg_url) as killed:
        await asyncio.gather(*(writer(w) for w in range(WRITERS)))
    assert killed["backends"] > 0 and sum(outcomes.values()) > 0  # the storm really happened
    for w in range(WRITERS):
        rows = await store.history(f"{run}-w{w}")
        assert [row.seq for row in rows] == list(range(1, 2 * APPENDS + 1))  # gapless
        assert _texts(rows) == [f"{w}:{k}" for k in range(APPENDS) for _ in (1, 2)]
    await store.close()


async def test_sqlsession_retries_an_unknown_outcome_once_and_never_duplicates(
    pg_url: str,
) -> None:
    store = SessionStore(pg_url, timeout_s=10)
    await store.ensure_ready()
    acknowledged: dict[int, list[str]] = {w: [] for w in range(WRITERS)}
    failed = Counter[bool]()
    run = uuid.uuid4().hex[:8]  # pg_url is shared by the tests of this worker

    async def writer(w: int) -> None:
        session = SQLSession(f"{run}-s{w}", store)
        for k in range(APPENDS):
            try:
                await session.add_items([{"role": "user", "content": f"{w}:{k}"}])
                acknowledged[w].append(f"{w}:{k}")
            except StoreUnavailableError as error:  # the only kind allowed through
                failed[error.outcome_known] += 1

    async with _terminating_backends(pg_url):
        await asyncio.gather(*(writer(w) for w in range(WRITERS)))
    for w in range(WRITERS):
        stored = _texts(await store.history(f"{run}-s{w}"))
        assert len(stored) == len(set(stored))  # nothing twice
        assert set(acknowledged[w]) <= set(stored)  # everything acknowledged is there
        assert stored == sorted(stored, key=lambda text: int(text.split(":")[1]))  # in order
    await store.close()


async def test_an_unreachable_database_is_one_clear_error_with_a_known_outcome() -> None:
    store = SessionStore("postgresql+asyncpg://nobody@127.0.0.1:1/nowhere", timeout_s=5)
    with pytest.raises(StoreUnavailableError) as caught:
        await store.append("s", [{"role": "user", "content": "x"}])
    assert caught.value.outcome_known
    assert "connection refused" in str(caught.value)
    assert "Error" not in str(caught.value)  # no driver or OS exception class names
    await store.close()


async def test_a_commit_whose_reply_was_lost_is_stored_once_however_often_replayed(
    pg_url: str,
) -> None:
    """The deterministic case of the storm above (issue #34): the server commits the
    batch, the connection breaks before its reply, and the caller, told the outcome is
    unknown, replays the batch with its token three times: it is stored exactly once."""
    target = make_url(pg_url)
    sid = f"lost-reply-{uuid.uuid4().hex[:8]}"
    batch = [{"role": "user", "content": "pay invoice 7"}, {"role": "assistant", "content": "ok"}]
    async with pg_proxy(target.host or "127.0.0.1", target.port or 5432) as proxy:
        through = target.set(host="127.0.0.1", port=proxy.port).render_as_string(False)
        async with SessionStore(through, timeout_s=10) as store:
            await store.append(sid, [{"role": "user", "content": "before"}])
            proxy.arm(b"pay invoice 7")
            with pytest.raises(StoreUnavailableError) as caught:
                await store.append(sid, batch, token="turn-7")
            assert proxy.dropped == 1
            assert caught.value.outcome_known is False and caught.value.token == "turn-7"
            async with SessionStore(pg_url) as direct:  # the server did commit it
                assert _texts(await direct.history(sid)) == ["before", "pay invoice 7", "ok"]
            replies = [await store.append(sid, batch, token=caught.value.token) for _ in range(3)]
    assert replies == [[2, 3]] * 3  # the seqs the lost reply would have said
    async with SessionStore(pg_url) as direct:
        stored = _texts(await direct.history(sid))
    assert stored == ["before", "pay invoice 7", "ok"]
