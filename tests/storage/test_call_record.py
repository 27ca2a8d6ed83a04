"""A model call's record, the pre-flight's driver-level write, on both backends: the decision
is taken from the stored total (whoever changed it), call numbers stay gapless under
concurrent records, a decision against recording writes nothing, and events are stored
redacted and exactly as the store's other event writes store them."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from sessionstore import Event, SessionStore
from sessionstore._storage._sqlite._database import SQLiteDatabase
from tests.support.cli import SECRET
from tests.support.histories import assistant, user

Decide = Callable[[int], list[Event] | None]


def estimate_below(limit: int, seen: list[int]) -> Decide:
    """Record (with one estimate event naming the total) below `limit`; None at or above."""

    def decide(stored: int) -> list[Event] | None:
        seen.append(stored)
        if stored >= limit:
            return None
        return [Event("compact.token_estimate", "s", fields={"t_est": stored, "triggered": False})]

    return decide


async def _rows(store: SessionStore, sql: str) -> list[dict[str, Any]]:
    async with store.engine.connect() as conn:
        return [dict(row._mapping) for row in await conn.execute(sa.text(sql))]


@pytest.fixture
async def two_stores(db_url: str) -> AsyncIterator[tuple[SessionStore, SessionStore]]:
    """A store and another process's store on the same database, session "s" begun."""
    async with (
        SessionStore(db_url, create_tables=True) as store,
        SessionStore(db_url) as other_process,
    ):
        await store.append("s", [user("hi")])
        yield store, other_process


async def test_concurrent_records_of_one_session_number_calls_without_gaps(
    two_stores: tuple[SessionStore, SessionStore],
) -> None:
    store, other_process = two_stores
    seen: list[int] = []
    ids = await asyncio.gather(
        *(
            writer.record_model_call("s", [user("hi")], decide=estimate_below(10**6, seen))
            for _ in range(12)
            for writer in (store, other_process)
        )
    )
    calls = await store.model_calls("s")
    assert [call.call for call in calls] == list(range(1, 25))
    assert len(set(ids)) == 24 and None not in ids
    estimates = await _rows(store, "SELECT event FROM events WHERE event LIKE 'compact.%'")
    assert len(estimates) == 24  # one per recorded call: retried decisions stored nothing


async def test_a_decision_against_recording_writes_nothing(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        await store.append("s", [user("hi")])
        total = await store.context_tokens("s")
        seen: list[int] = []
        assert (
            await store.record_model_call("s", [user("hi")], decide=estimate_below(0, seen)) is None
        )
        assert seen[-1] == total
        assert await store.model_calls("s") == []
        assert await _rows(store, "SELECT id FROM events WHERE event LIKE 'compact.%'") == []


async def test_the_total_is_read_again_when_another_store_changed_it(
    two_stores: tuple[SessionStore, SessionStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, other_process = two_stores
    published: list[Event] = []
    monkeypatch.setattr(store, "publish", published.extend)
    seen: list[int] = []
    await store.record_model_call("s", [user("hi")], decide=estimate_below(10**6, seen))
    await other_process.append("s", [assistant("a reply stored by someone else")])
    grown = await store.context_tokens("s")
    published.clear()
    # Below its limit before the other process's row, at it after: decided against, and
    # nothing a decision from the old total chose is published.
    assert await store.record_model_call("s", [], decide=estimate_below(grown, seen)) is None
    assert seen[-1] == grown and published == []
    row_id = await store.record_model_call("s", [user("hi")], decide=estimate_below(10**6, seen))
    assert row_id is not None and seen[-1] == grown
    assert [event.fields["t_est"] for event in published] == [grown]
    await other_process.clear("s")  # the total drops: a stale total must not decide against
    assert await store.record_model_call("s", [], decide=estimate_below(grown, seen))
    assert seen[-1] == 0
    calls = await store.model_calls("s")
    assert [call.input_tokens_est for call in calls] == [seen[0], grown, 0]
    stored = await _rows(store, "SELECT t_est FROM events WHERE event LIKE 'compact.%' ORDER BY id")
    assert [row["t_est"] for row in stored] == [seen[0], grown, 0]  # only what was recorded


async def test_own_appends_keep_the_record_one_statement_on_postgresql(
    fresh_pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with SessionStore(fresh_pg_url, create_tables=True) as store:
        await store.append("s", [user("hi")])
        seen: list[int] = []
        await store.record_model_call("s", [user("hi")], decide=estimate_below(10**6, seen))
        await store.append("s", [assistant("hello")])
        statements: list[str] = []
        fetch = store.database.fetch_statement  # type: ignore[union-attr]

        async def counted(sql: str, *args: Any, writing: bool = False) -> Any:
            statements.append(sql)
            return await fetch(sql, *args, writing=writing)

        monkeypatch.setattr(store.database, "fetch_statement", counted)
        await store.record_model_call("s", [user("hi")], decide=estimate_below(10**6, seen))
        assert len(statements) == 1 and seen[-1] == await store.context_tokens("s")


async def test_events_are_stored_redacted_and_as_the_other_event_writes_store_them(
    db_url: str,
) -> None:
    fields = {
        "note": f"key {SECRET}",
        "t_est": 7,
        "max": 9,
        "triggered": True,
        "compression_ratio": 0.5,
    }
    ts = datetime(2026, 11, 26, 1, 2, 3, 456789, tzinfo=UTC)
    decision = Event("compact.trigger_decision", "s", severity="warn", fields=fields, ts=ts)
    async with SessionStore(db_url, create_tables=True) as store:
        await store.append("s", [user("hi")])
        await store.record_model_call("s", [user("hi")], decide=lambda stored: [decision])
        await store.record_events([decision])
        recorded, written = await _rows(
            store, "SELECT * FROM events WHERE event = 'compact.trigger_decision' ORDER BY id"
        )
    assert SECRET not in json.dumps(recorded, default=str)
    assert {**recorded, "id": None} == {**written, "id": None}
    assert recorded["triggered"] and (recorded["t_est"], recorded["max_tokens"]) == (7, 9)
    assert recorded["compression_ratio"] == 0.5 and recorded["severity"] == "warn"


async def test_a_record_commits_without_waiting_for_the_disk_and_appends_still_do(
    sqlite_url: str,
) -> None:
    """On SQLite a call's record (telemetry) commits at synchronous=NORMAL, and the writer's
    connection is back at FULL for the appends that follow (the conversation stays durable)."""
    async with SessionStore(sqlite_url) as store:
        await store.append("s", [user("hello")])
        database = store.database
        assert isinstance(database, SQLiteDatabase)
        statements: list[str] = []
        raw = await database.write(lambda conn: conn.connection.driver_connection)
        await database.write(lambda conn: raw.set_trace_callback(statements.append))
        assert await store.record_model_call("s", [user("hello")]) == 1
        await store.append("s", [assistant("hi")])
        await database.write(lambda conn: raw.set_trace_callback(None))
        record = statements.index("PRAGMA synchronous = NORMAL")
        assert statements[record + 1] == "BEGIN IMMEDIATE"
        restored = statements.index("PRAGMA synchronous = FULL")
        assert statements[restored - 1] == "COMMIT" and restored > record
        append = statements.index("BEGIN IMMEDIATE", restored)  # the append, back at FULL
        assert "PRAGMA synchronous" not in " ".join(statements[restored + 1 : append])
        assert statements.count("PRAGMA synchronous = NORMAL") == 1
        level = await database.write(
            lambda conn: conn.exec_driver_sql("PRAGMA synchronous").scalar_one()
        )
        assert level == 2  # FULL


async def test_a_postgresql_record_relaxes_only_its_own_commit(fresh_pg_url: str) -> None:
    """The record's statement commits without waiting for the WAL flush (telemetry), and the
    pooled connections it ran on are left at the server's synchronous_commit."""
    async with SessionStore(fresh_pg_url, create_tables=True) as store:
        await store.append("s", [user("hi")])
        fetch = store.database.fetch_statement  # type: ignore[union-attr]
        [(default,)] = await fetch("SHOW synchronous_commit")
        for n in range(5):
            assert await store.record_model_call("s", [user("hi")]) == n + 1
        settings = [(await fetch("SHOW synchronous_commit"))[0][0] for _ in range(10)]
        assert settings == [default] * 10 and default == "on"


async def test_the_estimate_leaves_out_what_masking_took_from_the_stored_context(
    two_stores: tuple[SessionStore, SessionStore],
) -> None:
    store, _ = two_stores
    await store.append("s", [assistant("x " * 300)])
    stored = await store.context_tokens("s")
    seen: list[int] = []
    masked = stored - 5  # more than the unsaved items add: the estimate is below the total
    ways: tuple[dict[str, Any], ...] = ({"events": []}, {"decide": estimate_below(10**6, seen)})
    for events in ways:
        await store.record_model_call(
            "s", [user("q")], unsaved_items=1, unsaved_tokens=3, masked_tokens=masked, **events
        )
    calls = await store.model_calls("s")
    assert [call.input_tokens_est for call in calls] == [stored + 3 - masked] * 2 == [8, 8]
    with pytest.raises(ValueError, match="masked_tokens"):
        await store.record_model_call("s", [user("q")], masked_tokens=-1)


def _recording_thread(names: list[str]) -> Decide:
    """Record (no events), noting the thread the decision was taken on."""

    def decide(stored: int) -> list[Event]:
        names.append(threading.current_thread().name)
        return []

    return decide


async def test_a_record_runs_on_the_callers_thread_while_the_writer_idles(
    sqlite_url: str,
) -> None:
    """No thread hop: the writer thread idles, so the caller's thread borrows its connection.
    The borrower never waits for the write lock and never checkpoints the WAL: the
    connection's busy timeout and auto-checkpoint are set for it and restored after."""
    async with SessionStore(sqlite_url, sqlite_busy_timeout_ms=4321) as store:
        await store.append("s", [user("hello")])
        database = store.database
        assert isinstance(database, SQLiteDatabase)

        async def settings() -> list[int]:
            return await database.write(
                lambda conn: [
                    conn.exec_driver_sql(f"PRAGMA {name}").scalar_one()
                    for name in ("busy_timeout", "wal_autocheckpoint")
                ]
            )

        own = await settings()
        statements: list[str] = []
        raw = await database.write(lambda conn: conn.connection.driver_connection)
        await database.write(lambda conn: raw.set_trace_callback(statements.append))
        names: list[str] = []
        assert await store.record_model_call("s", [user("hello")], decide=_recording_thread(names))
        await database.write(lambda conn: raw.set_trace_callback(None))
        assert names == [threading.current_thread().name]
        begin, commit = statements.index("BEGIN IMMEDIATE"), statements.index("COMMIT")
        before, after = statements[:begin], statements[commit + 1 :]
        assert {"PRAGMA busy_timeout = 0", "PRAGMA wal_autocheckpoint = 0"} <= set(before)
        restored = {f"PRAGMA busy_timeout = {own[0]}", f"PRAGMA wal_autocheckpoint = {own[1]}"}
        assert restored <= set(after) and own[0] == 4321 and own[1] > 0
        assert await settings() == own


async def test_a_record_queues_for_the_writer_thread_while_it_works(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url) as store:
        await store.append("s", [user("hello")])
        started, release = threading.Event(), threading.Event()

        def hold(conn: Any) -> None:
            started.set()
            release.wait(10)

        holding = asyncio.ensure_future(store.database.write(hold))
        await asyncio.to_thread(started.wait, 10)
        names: list[str] = []
        record = asyncio.ensure_future(
            store.record_model_call("s", [user("hello")], decide=_recording_thread(names))
        )
        await asyncio.sleep(0.1)
        assert not record.done() and names == []  # queued behind the writer's job
        release.set()
        await holding
        assert await record == 1
        assert names == ["sessionstore-sqlite-writer_0"]


async def test_a_record_never_waits_on_the_callers_thread_for_another_process(
    sqlite_url: str,
) -> None:
    """Another process holds the write lock: the caller's thread gives way at once (its loop
    keeps running), the record queues on the writer thread and commits once the lock is
    free."""
    async with SessionStore(sqlite_url, sqlite_busy_timeout_ms=10_000) as store:
        await store.append("s", [user("hello")])
        other = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            ticks = 0

            async def heartbeat() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            beating = asyncio.ensure_future(heartbeat())
            names: list[str] = []
            record = asyncio.ensure_future(
                store.record_model_call("s", [user("hello")], decide=_recording_thread(names))
            )
            await asyncio.sleep(0.5)
            assert not record.done() and ticks >= 10  # waiting, but not on the loop's thread
            other.execute("COMMIT")
            assert await record == 1
            beating.cancel()
        finally:
            other.close()
        assert names == ["sessionstore-sqlite-writer_0"]
        assert [call.call for call in await store.model_calls("s")] == [1]
