"""Alembic migrations: up/down/up on both backends, and agreement with schema.py."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sessionstore import SchemaMissingError, SchemaTooNewError, SessionStore, StoreTimeoutError
from sessionstore._schema import ROW_KINDS, metadata
from sessionstore._storage._database import open_database
from sessionstore._storage._migrations import current_revision, downgrade, upgrade
from sessionstore._storage._revisions import head_revision
from sessionstore._storage._urls import resolve_url
from tests.support.database import migrate_to, read_as_it_is, write_as_it_is
from tests.support.histories import assistant, message, user
from tests.support.invariants import assert_session_invariants
from tests.support.managers import small_window_manager
from tests.support.schema_catalog import schema_diff


def _tables(connection: Connection) -> set[str]:
    return set(sa.inspect(connection).get_table_names())


async def test_upgrade_downgrade_upgrade_and_schema_matches(fresh_db_url: str) -> None:
    database = open_database(resolve_url(fresh_db_url))
    try:
        assert await current_revision(database) is None
        await upgrade(database)
        assert await current_revision(database) == head_revision()
        assert await database.read(schema_diff) == []
        await downgrade(database, "base")
        assert await current_revision(database) is None
        assert await database.read(_tables) & set(metadata.tables) == set()
        await upgrade(database)
        assert await database.read(schema_diff) == []
        assert set(metadata.tables) <= await database.read(_tables)
    finally:
        await database.dispose()


async def test_store_refuses_a_database_without_tables(fresh_db_url: str) -> None:
    store = SessionStore(fresh_db_url, create_tables=False)
    with pytest.raises(SchemaMissingError, match="sessionstore migrate") as caught:
        await store.load_context("s")
    assert "password" not in str(caught.value)
    await store.close()


async def test_store_refuses_a_database_from_a_newer_release(fresh_db_url: str) -> None:
    async with SessionStore(fresh_db_url, create_tables=True) as store:
        await store.append("s", [{"role": "user", "content": "keep me"}])
        async with store.engine.begin() as conn:
            await conn.execute(sa.text("UPDATE alembic_version SET version_num = 'f00d_future'"))
    newer = SessionStore(fresh_db_url, create_tables=True)
    with pytest.raises(SchemaTooNewError, match="Upgrade sessionstore") as caught:
        await newer.append("s", [{"role": "user", "content": "x"}])
    assert "f00d_future" in str(caught.value)
    await newer.close()
    async with store.engine.begin() as conn:  # nothing was changed or lost
        await conn.execute(sa.text(f"UPDATE alembic_version SET version_num = '{head_revision()}'"))
    async with SessionStore(fresh_db_url) as again:
        assert await again.load_context("s") == [{"role": "user", "content": "keep me"}]


async def test_store_names_a_dropped_table(fresh_db_url: str) -> None:
    async with (
        SessionStore(fresh_db_url, create_tables=True) as store,
        store.engine.begin() as conn,
    ):
        await conn.execute(sa.text("DROP TABLE events"))
    broken = SessionStore(fresh_db_url, create_tables=True)
    with pytest.raises(SchemaMissingError, match="events") as caught:
        await broken.history("s")
    assert "backup" in str(caught.value)
    await broken.close()


async def test_store_names_a_dropped_column(sqlite_url: str) -> None:
    async with (
        SessionStore(sqlite_url, create_tables=True) as store,
        store.engine.begin() as conn,
    ):
        await conn.execute(sa.text("ALTER TABLE events DROP COLUMN fallback"))
    broken = SessionStore(sqlite_url)
    with pytest.raises(SchemaMissingError, match=r"events\.fallback"):
        await broken.history("s")
    await broken.close()


@contextlib.contextmanager
def _migrating_elsewhere(path: Path, seconds: float) -> Iterator[None]:
    """Another process's migration, as SQLite sees it: a write lock on a new file, held for
    `seconds` from a thread of its own."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("BEGIN IMMEDIATE")

    def release() -> None:
        time.sleep(seconds)
        holder.execute("ROLLBACK")
        holder.close()

    thread = threading.Thread(target=release)
    thread.start()
    try:
        yield
    finally:
        thread.join()


async def test_a_new_file_migrating_elsewhere_is_waited_for_past_the_busy_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "new.db"
    with _migrating_elsewhere(path, 0.6):
        async with SessionStore(
            f"sqlite:///{path}", create_tables=True, sqlite_busy_timeout_ms=100, timeout_s=10
        ) as store:
            await store.append("s", [{"role": "user", "content": "x"}])
            assert [item["content"] for item in await store.load_context("s")] == ["x"]


async def test_a_migration_elsewhere_that_outlasts_timeout_s_fails_clearly(
    tmp_path: Path,
) -> None:
    path = tmp_path / "new.db"
    with _migrating_elsewhere(path, 1.5):
        store = SessionStore(
            f"sqlite:///{path}", create_tables=True, sqlite_busy_timeout_ms=100, timeout_s=0.3
        )
        with pytest.raises(StoreTimeoutError, match=r"waited 0\.3 s for another process migrating"):
            await store.append("s", [{"role": "user", "content": "x"}])
        await store.close()


async def _held(url: str, sql: str) -> set[tuple[str, int, int]]:
    """(session, seq, archive) for every archived row, read with `sql`."""

    def read(connection: Connection) -> set[tuple[str, int, int]]:
        return {(str(s), int(q), int(a)) for s, q, a in connection.execute(sa.text(sql))}

    return await read_as_it_is(url, read)


async def _check_constraints(url: str, table: str) -> set[str]:
    def read(connection: Connection) -> set[str]:
        found = sa.inspect(connection).get_check_constraints(table)
        return {str(check["name"]) for check in found}

    return await read_as_it_is(url, read)


_MEMBERS_0017 = "SELECT session_id, seq, archive_id FROM archive_members"
_RANGES_0018 = (
    "SELECT r.session_id, m.seq, r.archive_id FROM archive_ranges r JOIN messages m"
    " ON m.session_id = r.session_id AND m.seq BETWEEN r.first_seq AND r.last_seq"
)


async def test_0018_folds_members_into_runs_and_back_exactly(fresh_db_url: str) -> None:
    """Archives holding runs split by pinned rows, a second compaction, a branch's own rows:
    the rows each archive holds are the same before, after and back, runs as few as can be."""
    async with SessionStore(fresh_db_url, create_tables=True) as store:
        manager = small_window_manager(store)
        for turn in range(24):
            pinned = [message("system", f"rule {turn}")] if turn % 5 == 2 else []
            await manager.append("s", [*pinned, user(f"step {turn} " * 30), assistant("ok " * 30)])
        await manager.compact("s", trigger="manual")
        await store.fork("s", "b")
        await manager.append("b", [user("branch " * 40), assistant("fine " * 40)] * 3)
        assert (await manager.compact("b", trigger="manual")).compacted
    before = await _held(fresh_db_url, _RANGES_0018)
    assert {session for session, _, _ in before} == {"s", "b"}
    await migrate_to(fresh_db_url, "0017", down=True)
    assert await _held(fresh_db_url, _MEMBERS_0017) == before
    await migrate_to(fresh_db_url, head_revision())
    assert await _held(fresh_db_url, _RANGES_0018) == before
    async with SessionStore(fresh_db_url) as store, store.engine.connect() as conn:
        runs = list(
            await conn.execute(
                sa.text(
                    "SELECT archive_id, first_seq, last_seq FROM archive_ranges"
                    " ORDER BY archive_id, first_seq"
                )
            )
        )
        for session_id in ("s", "b"):
            await assert_session_invariants(store, session_id)
    assert len(runs) > len({archive for archive, _, _ in runs})  # pinned rows split runs
    checks = await _check_constraints(fresh_db_url, "archive_ranges")
    assert checks == {"ck_archive_ranges_first_before_last"}  # the name _schema.py declares
    assert all(  # maximal: no run of an archive ends just before its next one starts
        (a1, l1 + 1) != (a2, f2) for (a1, _, l1), (a2, f2, _) in pairwise(runs)
    )


_KINDS_IN = "kind IN ('item', 'carry', 'summary', 'tombstone', 'clear')"
_KINDS_OR = (
    "kind = 'item' OR kind = 'carry' OR kind = 'summary' OR kind = 'tombstone' OR kind = 'clear'"
)
_STORED = "SELECT session_id, seq, kind, payload, digest FROM messages ORDER BY session_id, seq"


def _kind_check(connection: Connection) -> str:
    """SQLite: the whole definition of `messages`; PostgreSQL: the kind check's."""
    if connection.dialect.name == "sqlite":
        sql = "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'messages'"
    else:
        sql = (
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conname = 'ck_messages_kind_known'"
        )
    return str(connection.exec_driver_sql(sql).scalar_one())


def _accepted_kinds(connection: Connection) -> dict[str, bool]:
    """Which kinds a new row may have (each tried in a savepoint rolled back after)."""
    accepted: dict[str, bool] = {}
    for n, kind in enumerate((*ROW_KINDS, "bogus", "Item", "item ")):
        attempt = connection.begin_nested()
        try:
            connection.execute(
                sa.text("INSERT INTO messages (session_id, seq, kind) VALUES ('s', :seq, :kind)"),
                {"seq": 1_000 + n, "kind": kind},
            )
            accepted[kind] = True
        except sa.exc.IntegrityError as error:
            assert "kind_known" in str(error)
            accepted[kind] = False
        attempt.rollback()
    return accepted


async def test_0019_checks_kinds_with_equalities_on_sqlite_and_back(fresh_db_url: str) -> None:
    """The same kinds accepted and refused at 0018 and at 0019, not a stored byte changed;
    on SQLite the definition says equalities at 0019 and IN at 0018, and a connection opened
    before the change sees the new schema version."""
    async with SessionStore(fresh_db_url, create_tables=True) as store:
        await store.append("s", [user("hello"), assistant("hi there")])
    sqlite = fresh_db_url.startswith("sqlite")
    expected = {**dict.fromkeys(ROW_KINDS, True), "bogus": False, "Item": False, "item ": False}
    stored = await read_as_it_is(fresh_db_url, lambda c: list(c.exec_driver_sql(_STORED)))
    assert (_KINDS_OR if sqlite else "ANY") in await read_as_it_is(fresh_db_url, _kind_check)
    assert await write_as_it_is(fresh_db_url, _accepted_kinds) == expected

    await migrate_to(fresh_db_url, "0018", down=True)
    at_0018 = await read_as_it_is(fresh_db_url, _kind_check)
    assert (_KINDS_IN in at_0018 and _KINDS_OR not in at_0018) if sqlite else "ANY" in at_0018
    assert await write_as_it_is(fresh_db_url, _accepted_kinds) == expected

    if sqlite:  # a connection that has read the old definition, as another process's would
        path = fresh_db_url.removeprefix("sqlite:///")
        other = sqlite3.connect(path)
        (version,) = other.execute("PRAGMA schema_version").fetchone()
    await migrate_to(fresh_db_url, head_revision())
    at_head = await read_as_it_is(fresh_db_url, _kind_check)
    assert (_KINDS_OR in at_head and _KINDS_IN not in at_head) if sqlite else "ANY" in at_head
    assert await write_as_it_is(fresh_db_url, _accepted_kinds) == expected
    assert await read_as_it_is(fresh_db_url, lambda c: list(c.exec_driver_sql(_STORED))) == stored
    if sqlite:
        assert other.execute("PRAGMA schema_version").fetchone()[0] > version  # 0019 and on
        assert other.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        other.close()
    async with SessionStore(fresh_db_url) as store:
        await store.append("s", [user("after")])
        await assert_session_invariants(store, "s")


async def test_0019_and_back_while_another_connection_writes(sqlite_url: str) -> None:
    """Another connection (another process's, as far as SQLite knows) commits all along while
    0019 is applied and undone: none of its commits fails, an unknown kind is refused at
    every moment, and the file stays consistent."""
    async with SessionStore(sqlite_url, create_tables=True) as store:
        await store.append("s", [user("hello")])
    path = sqlite_url.removeprefix("sqlite:///")
    stop = threading.Event()
    committed: list[int] = []
    failures: list[str] = []

    def write() -> None:
        other = sqlite3.connect(path, isolation_level=None, timeout=30)
        other.create_function("sessionstore_maintenance", 0, lambda: 0)
        insert = "INSERT INTO messages (session_id, seq, kind) VALUES ('s', ?, ?)"
        seq = 1_000
        try:
            while not stop.is_set() or not committed:
                other.execute("BEGIN IMMEDIATE")
                other.execute(insert, (seq, "clear"))
                try:
                    other.execute(insert, (seq + 1, "x"))
                    failures.append(f"kind 'x' accepted at seq {seq + 1}")
                except sqlite3.IntegrityError as error:
                    if "kind_known" not in str(error):
                        failures.append(str(error))
                other.execute("COMMIT")
                committed.append(seq)
                seq += 2
                # With gaps, as an application's appends come: SQLite's lock is not fair, and a
                # writer that never pauses can starve a migrator past its busy timeout.
                time.sleep(0.001)
            failures.extend(
                row for (row,) in other.execute("PRAGMA integrity_check") if row != "ok"
            )
        except Exception as error:  # the test's thread must hear of it
            failures.append(repr(error))
        finally:
            other.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        for _ in range(3):
            await migrate_to(sqlite_url, "0018", down=True)
            await migrate_to(sqlite_url, head_revision())
    finally:
        stop.set()
        writer.join()
    assert failures == []
    assert committed
    definition = await read_as_it_is(sqlite_url, _kind_check)
    assert _KINDS_OR in definition and _KINDS_IN not in definition
