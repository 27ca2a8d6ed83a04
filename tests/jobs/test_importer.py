"""Importing the Agents SDK's own session databases (sessionstore._jobs._importer).

Every source here is written by the SDK itself: SQLiteSession on a file, and
SQLAlchemySession on SQLite and on the real PostgreSQL, driven by real
`Runner.run` turns (with a tool call) against `agents.testing.ScriptedModel`.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from agents import SQLiteSession
from agents.extensions.memory import AdvancedSQLiteSession, SQLAlchemySession
from agents.memory import Session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import create_async_engine

from sessionstore import SessionStore, SQLSession
from sessionstore._errors import ImportSourceError
from sessionstore._jobs import _importer as importer
from sessionstore._jobs import _sdk_source as sdk_source
from sessionstore._jobs._importer import ImportProgress, ImportReport, import_sdk_sessions
from sessionstore._jobs._sdk_source import (
    IMPORT_KEY,
    ImportMarker,
    Page,
    SourceOrder,
    SourceRow,
    open_source,
    parse_message,
)
from tests.support.sdk_runs import PROMPTS, converse

SOURCES = ("sqlite_session", "sqlalchemy_sqlite", "sqlalchemy_postgresql")


@dataclass
class SdkDatabase:
    """An Agents SDK database, written through the SDK's own session classes."""

    kind: str
    url: str  # what a user passes to `sessionstore import`
    path: Path | None = None  # the SQLite file, when there is one
    opened: list[Session] = field(default_factory=list)

    def session(self, session_id: str, **options: Any) -> Session:
        """The SDK session this database's kind of user would have had."""
        opened: Session
        if self.kind == "sqlite_session":
            assert self.path is not None
            opened = SQLiteSession(session_id, self.path, **options)
        else:
            opened = SQLAlchemySession.from_url(
                session_id, url=self.url, create_tables=True, **options
            )
        self.opened.append(opened)
        return opened

    async def execute(self, sql: str) -> None:
        """Raw SQL on the SDK's tables (what a foreign writer or a corruption would do)."""
        engine = create_async_engine(
            self.url if self.path is None else f"sqlite+aiosqlite:///{self.path}"
        )
        try:
            async with engine.begin() as conn:
                await conn.execute(sa.text(sql))
        finally:
            await engine.dispose()

    async def close(self) -> None:
        """Close every SDK session (their engines and connections)."""
        for opened in self.opened:
            if isinstance(opened, SQLiteSession):
                opened.close()
            elif isinstance(opened, SQLAlchemySession):
                await opened.engine.dispose()


@pytest.fixture(params=SOURCES)
def sdk_url(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """(kind, url) of an empty SDK database: a SQLite file, or a PostgreSQL database."""
    kind: str = request.param
    if kind == "sqlalchemy_postgresql":
        return kind, request.getfixturevalue("fresh_pg_url")
    if kind == "sqlalchemy_sqlite":
        return kind, f"sqlite+aiosqlite:///{tmp_path / 'sdk_alchemy.db'}"
    return kind, str(tmp_path / "conversations.db")


@pytest.fixture
async def sdk(sdk_url: tuple[str, str]) -> AsyncIterator[SdkDatabase]:
    """The SDK database; every SDK session opened on it is closed after the test."""
    kind, url = sdk_url
    database = SdkDatabase(kind, url, Path(url) if kind == "sqlite_session" else None)
    yield database
    await database.close()


@pytest.fixture
def sqlite_sdk_path(tmp_path: Path) -> Path:
    """Where a SQLiteSession user keeps conversations."""
    return tmp_path / "conversations.db"


async def target_tokens(store: SessionStore, session_id: str) -> int:
    """The token total the store itself keeps, checked against its rows."""
    rows = await store.history(session_id)
    total = await store.context_tokens(session_id)
    assert total == sum(row.tokens for row in rows) and total > 0
    return total


def sha256_of(path: Path) -> str:
    """The file's digest (to prove an import never wrote it)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def session(report: ImportReport, session_id: str) -> importer.SessionImport:
    """One session's entry of a report."""
    (found,) = [entry for entry in report.sessions if entry.session_id == session_id]
    return found


# ------------------------------------------------------------------ round trip


async def test_imported_sessions_equal_what_the_sdk_returns(
    sdk: SdkDatabase, store: SessionStore
) -> None:
    alice, bob = sdk.session("alice"), sdk.session("bob")
    await converse(alice, PROMPTS)
    await converse(bob, ["hi"])
    updates: list[ImportProgress] = []

    report = await import_sdk_sessions(sdk.url, store, progress=updates.append)

    assert report.ok and [entry.session_id for entry in report.sessions] == ["alice", "bob"]
    for session_id, sdk_session in (("alice", alice), ("bob", bob)):
        expected = await sdk_session.get_items()
        assert await SQLSession(session_id, store).get_items() == expected
        entry = session(report, session_id)
        assert (entry.status, entry.imported, entry.skipped) == ("imported", len(expected), 0)
        assert entry.tokens == await target_tokens(store, session_id)
    assert report.total("imported") == 10 and updates[-1].done == updates[-1].total == 10
    calls = [row for row in await store.history("alice") if row.call_id == "call_1"]
    assert [(row.item_type, row.tool_name) for row in calls] == [
        ("function_call", "get_weather"),
        ("function_call_output", "get_weather"),
    ]


async def test_a_second_run_imports_nothing(sdk: SdkDatabase, store: SessionStore) -> None:
    await converse(sdk.session("alice"), PROMPTS)
    first = await import_sdk_sessions(sdk.url, store)
    before = await store.session_info("alice")

    again = await import_sdk_sessions(sdk.url, store)

    entry = session(again, "alice")
    assert (entry.status, entry.imported, entry.already_present) == ("up_to_date", 0, 8)
    assert again.ok and first.total("imported") == 8 and again.total("tokens") == 0
    assert await store.session_info("alice") == before


async def test_a_rerun_imports_only_what_the_sdk_added(
    sdk: SdkDatabase, store: SessionStore
) -> None:
    alice = sdk.session("alice")
    await converse(alice, PROMPTS[:1])
    await import_sdk_sessions(sdk.url, store)
    await store.merge_session_metadata("alice", {"owner": "support-team"})

    await converse(alice, PROMPTS[1:])
    report = await import_sdk_sessions(sdk.url, store)

    entry = session(report, "alice")
    assert (entry.imported, entry.already_present) == (6, 2)
    assert await SQLSession("alice", store).get_items() == await alice.get_items()
    assert len(await store.history("alice")) == 8  # nothing twice
    assert entry.tokens == sum(row.tokens for row in (await store.history("alice"))[2:])
    metadata = await store.session_metadata("alice")
    assert metadata is not None and metadata["owner"] == "support-team"
    assert metadata[IMPORT_KEY]["source_rows"] == 8 and metadata[IMPORT_KEY]["target_seq"] == 8


async def test_a_dry_run_writes_nothing(sdk: SdkDatabase, store: SessionStore) -> None:
    await converse(sdk.session("alice"), PROMPTS)

    report = await import_sdk_sessions(sdk.url, store, dry_run=True)

    entry = session(report, "alice")
    assert report.dry_run and (entry.status, entry.imported) == ("would_import", 8)
    assert entry.tokens > 0 and await store.session_info("alice") is None
    real = await import_sdk_sessions(sdk.url, store)
    assert session(real, "alice").tokens == entry.tokens


# ------------------------------------------------------------------- read-only


async def test_source_connections_cannot_write(sdk: SdkDatabase) -> None:
    alice = sdk.session("alice")
    await converse(alice, ["hi"])
    source = await open_source(sdk.url)
    try:
        async with source.reading() as conn:
            with pytest.raises(sa.exc.DBAPIError):
                await conn.execute(sa.text("DELETE FROM agent_messages"))
    finally:
        await source.engine.dispose()
    assert len(await alice.get_items()) == 2


async def test_a_sqlite_source_file_is_byte_for_byte_unchanged(
    sqlite_sdk_path: Path, sqlite_url: str
) -> None:
    sdk = SQLiteSession("alice", sqlite_sdk_path)
    await converse(sdk, PROMPTS)
    sdk.close()  # the SDK's last connection checkpoints the WAL into the file
    digest = sha256_of(sqlite_sdk_path)
    async with SessionStore(sqlite_url) as store:
        report = await import_sdk_sessions(str(sqlite_sdk_path), store)
    assert report.total("imported") == 8
    assert sha256_of(sqlite_sdk_path) == digest


async def test_the_sdk_file_itself_can_hold_the_imported_sessions(sqlite_sdk_path: Path) -> None:
    sdk = SQLiteSession("alice", sqlite_sdk_path)
    await converse(sdk, PROMPTS)
    async with SessionStore(f"sqlite:///{sqlite_sdk_path}") as store:
        report = await import_sdk_sessions(str(sqlite_sdk_path), store)
        assert report.ok and await SQLSession("alice", store).get_items() == await sdk.get_items()
    await sdk.add_items([{"role": "user", "content": "the SDK still works on its tables"}])
    assert len(await sdk.get_items()) == 9
    sdk.close()


async def test_an_advanced_sqlite_session_imports_its_main_branch_only(
    sqlite_sdk_path: Path, sqlite_url: str
) -> None:
    advanced = AdvancedSQLiteSession(
        session_id="alice", db_path=sqlite_sdk_path, create_tables=True
    )
    await converse(advanced, PROMPTS)
    await advanced.create_branch_from_turn(2, "retry")  # shares the first turn's rows
    await converse(advanced, ("another question",))
    await advanced.switch_to_branch("main")
    await converse(advanced, ("and one more on main",))
    main = await advanced.get_items()
    advanced.close()
    async with SessionStore(sqlite_url) as store:
        report = await import_sdk_sessions(str(sqlite_sdk_path), store)
        assert report.ok and report.total("imported") == len(main)
        assert await SQLSession("alice", store, import_sdk=False).get_items() == main
        again = await import_sdk_sessions(str(sqlite_sdk_path), store)
    [session] = again.sessions
    assert (session.status, session.already_present) == ("up_to_date", len(main))


# ------------------------------------------------------------- bad rows, options


async def test_unparseable_rows_are_reported_and_never_half_written(
    sqlite_sdk_path: Path, store: SessionStore
) -> None:
    sdk = SQLiteSession("alice", sqlite_sdk_path)
    good: list[Any] = [{"role": "user", "content": f"message {n}"} for n in range(3)]
    await sdk.add_items(good[:1])
    with sqlite3.connect(sqlite_sdk_path) as raw:
        for data in ("{broken", "[1, 2]", '{"role": "user", "content": NaN}'):
            raw.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES ('alice', ?)",
                (data,),
            )
    raw.close()
    await sdk.add_items(good[1:])

    report = await import_sdk_sessions(str(sqlite_sdk_path), store)

    entry = session(report, "alice")
    assert not report.ok and (entry.imported, entry.skipped) == (3, 3)
    assert [problem.message_id for problem in entry.problems] == [2, 3, 4]
    reasons = [problem.reason for problem in entry.problems]
    assert "not valid JSON" in reasons[0] and "JSON list, not an object" in reasons[1]
    assert "cannot be stored" in reasons[2] and "NaN" not in " ".join(reasons[:2])
    assert await SQLSession("alice", store).get_items() == good
    again = await import_sdk_sessions(str(sqlite_sdk_path), store)
    entry = session(again, "alice")
    assert (entry.imported, entry.already_present, entry.skipped_before) == (0, 3, (2, 3, 4))
    assert not again.ok  # the skipped rows are still missing from the target
    metadata = await store.session_metadata("alice")
    assert metadata is not None and metadata[IMPORT_KEY]["skipped"] == [2, 3, 4]
    sdk.close()


async def test_custom_table_names_and_session_selection(
    sqlite_sdk_path: Path, sqlite_url: str
) -> None:
    sessions_table, messages_table = "chat_sessions", "chat_messages"
    for session_id in ("alice", "bob"):
        sdk = SQLiteSession(session_id, sqlite_sdk_path, sessions_table, messages_table)
        await converse(sdk, ["hi"])
        sdk.close()
    async with SessionStore(sqlite_url) as store:
        with pytest.raises(ImportSourceError, match="named 'agent_sessions' and 'agent_messages'"):
            await import_sdk_sessions(str(sqlite_sdk_path), store)

        report = await import_sdk_sessions(
            str(sqlite_sdk_path),
            store,
            session_ids=["bob", "ghost"],
            sessions_table=sessions_table,
            messages_table=messages_table,
        )

        assert [(entry.session_id, entry.status) for entry in report.sessions] == [
            ("bob", "imported"),
            ("ghost", "not_found"),
        ]
        assert not report.ok and "no session 'ghost'" in (report.sessions[1].reason or "")
        assert await store.session_info("alice") is None
        assert len(await store.load_context("bob")) == 2
        # Another table of the same file is another source: never taken as more of the first.
        other = SQLiteSession("bob", sqlite_sdk_path)
        await other.add_items([{"role": "user", "content": "from the default tables"}])
        other.close()
        mixed = await import_sdk_sessions(str(sqlite_sdk_path), store)
        assert session(mixed, "bob").status == "refused"
        assert len(await store.load_context("bob")) == 2


@pytest.mark.parametrize("sdk_url", ["sqlalchemy_sqlite", "sqlalchemy_postgresql"], indirect=True)
async def test_sqlalchemy_sessions_keep_the_sdks_created_at_order(
    sdk: SdkDatabase, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = sdk.session("alice")
    for text in ("first", "second", "third", "fourth"):
        await alice.add_items([{"role": "user", "content": text}])
    # A writer that committed late: the newest id carries the oldest timestamp.
    await sdk.execute(
        "UPDATE agent_messages SET created_at = '2000-01-01 00:00:00' "
        "WHERE id = (SELECT max(id) FROM agent_messages)"
    )
    expected = await alice.get_items()
    assert expected[0]["content"] == "fourth"  # type: ignore[typeddict-item]
    monkeypatch.setattr(sdk_source, "PAGE_ROWS", 1)  # every page crosses the id order
    order: SourceOrder | None = (
        "created_at" if sdk.kind == "sqlalchemy_sqlite" else None
    )  # PostgreSQL's default
    async with SessionStore(sqlite_url) as store:
        await import_sdk_sessions(sdk.url, store, order=order)
        assert await SQLSession("alice", store).get_items() == expected
        again = await import_sdk_sessions(sdk.url, store, order=order)
        assert session(again, "alice").status == "up_to_date"
        metadata = await store.session_metadata("alice")
    assert metadata is not None and metadata[IMPORT_KEY]["also"] == []


def test_the_record_covers_exactly_the_messages_handled() -> None:
    start = ImportMarker("src", last_message_id=2, source_rows=2, target_seq=2)
    page = Page([SourceRow(7, {"role": "user"}), SourceRow(3, None, "bad")], [4, 8])

    after = start.advanced(page, target_seq=3)

    assert (after.last_message_id, after.also) == (3, (7,))
    assert (after.source_rows, after.target_seq, after.skipped) == (4, 3, (3,))
    done = after.advanced(Page([SourceRow(4, {}), SourceRow(8, {})], []), target_seq=5)
    assert (done.last_message_id, done.also, done.source_rows) == (8, (), 6)
    assert ImportMarker.recorded({IMPORT_KEY: done.as_json()}, "src") == done
    assert ImportMarker.recorded({IMPORT_KEY: done.as_json()}, "elsewhere") is None
    assert ImportMarker.recorded({IMPORT_KEY: {"source": "src"}}, "src") is None
    assert "NoneType, not JSON text" in (parse_message(9, None).problem or "")


# ------------------------------------------------------------ never mix, recover


async def test_a_target_session_with_other_items_is_refused_not_mixed(
    sqlite_sdk_path: Path, store: SessionStore
) -> None:
    sdk = SQLiteSession("alice", sqlite_sdk_path)
    await converse(sdk, ["hi"])
    mine = [{"role": "user", "content": "written by the new app"}]
    await store.append("alice", mine)

    refused = await import_sdk_sessions(str(sqlite_sdk_path), store)

    entry = session(refused, "alice")
    assert not refused.ok and entry.status == "refused"
    assert "already has 1 row(s) that did not come from" in (entry.reason or "")
    assert await store.load_context("alice") == mine
    appended = await import_sdk_sessions(str(sqlite_sdk_path), store, append_to_existing=True)
    assert appended.ok and session(appended, "alice").imported == 2
    assert await store.load_context("alice") == mine + await sdk.get_items()
    sdk.close()


async def test_target_use_after_import_is_fine_until_both_sides_grow(
    sqlite_sdk_path: Path, store: SessionStore
) -> None:
    sdk = SQLiteSession("alice", sqlite_sdk_path)
    await converse(sdk, ["hi"])
    await import_sdk_sessions(str(sqlite_sdk_path), store)
    await converse(SQLSession("alice", store), ["now on sessionstore"])

    unchanged_source = await import_sdk_sessions(str(sqlite_sdk_path), store)
    await sdk.add_items([{"role": "user", "content": "the old app was still running"}])
    both_grew = await import_sdk_sessions(str(sqlite_sdk_path), store)

    assert session(unchanged_source, "alice").status == "up_to_date"
    entry = session(both_grew, "alice")
    assert entry.status == "refused" and "changed since the last import" in (entry.reason or "")
    assert "ends at seq 4" in (entry.reason or "") and len(await store.history("alice")) == 4
    forced = await import_sdk_sessions(str(sqlite_sdk_path), store, append_to_existing=True)
    assert session(forced, "alice").imported == 1 and len(await store.history("alice")) == 5
    last = await import_sdk_sessions(str(sqlite_sdk_path), store)
    assert session(last, "alice").status == "up_to_date"
    sdk.close()


async def test_an_interrupted_run_is_recognised_and_never_duplicated(
    sqlite_sdk_path: Path, store: SessionStore
) -> None:
    sdk = SQLiteSession("alice", sqlite_sdk_path)
    await converse(sdk, PROMPTS)
    items = await sdk.get_items()
    # What a run killed between its append and its record leaves: rows, no record.
    await store.append("alice", items[:3])

    report = await import_sdk_sessions(str(sqlite_sdk_path), store)

    entry = session(report, "alice")
    assert report.ok and (entry.recovered, entry.imported) == (3, 5)
    assert await store.load_context("alice") == items
    assert len(await store.history("alice")) == 8
    sdk.close()


async def test_a_moved_sdk_file_is_recognised_not_imported_twice(
    sqlite_sdk_path: Path, tmp_path: Path, store: SessionStore
) -> None:
    sdk = SQLiteSession("alice", sqlite_sdk_path)
    await converse(sdk, PROMPTS)
    sdk.close()
    await import_sdk_sessions(str(sqlite_sdk_path), store)
    moved = await asyncio.to_thread(sqlite_sdk_path.rename, tmp_path / "archive-copy.db")

    report = await import_sdk_sessions(str(moved), store)

    entry = session(report, "alice")
    assert report.ok and (entry.recovered, entry.imported) == (8, 0)
    assert len(await store.history("alice")) == 8
    metadata = await store.session_metadata("alice")
    assert (
        metadata is not None
        and metadata[IMPORT_KEY]["source"] == f"sqlite:///{moved}#agent_messages"
    )


async def test_history_the_sdk_removed_after_import_is_refused(
    sqlite_sdk_path: Path, store: SessionStore
) -> None:
    sdk = SQLiteSession("alice", sqlite_sdk_path)
    await converse(sdk, PROMPTS)
    await import_sdk_sessions(str(sqlite_sdk_path), store)
    await sdk.pop_item()
    await sdk.add_items([{"role": "user", "content": "a different ending"}])

    report = await import_sdk_sessions(str(sqlite_sdk_path), store)

    entry = session(report, "alice")
    assert entry.status == "refused" and "no longer has 1 of the messages" in (entry.reason or "")
    assert len(await store.history("alice")) == 8
    sdk.close()


async def test_a_late_source_row_or_a_popped_target_is_refused(
    sqlite_sdk_path: Path, store: SessionStore
) -> None:
    sdk = SQLiteSession("alice", sqlite_sdk_path)
    await sdk.add_items([{"role": "user", "content": n} for n in ("a", "b")])
    await import_sdk_sessions(str(sqlite_sdk_path), store)
    await SQLSession("alice", store).pop_item()  # the target changed: a tombstone row
    await sdk.add_items([{"role": "user", "content": "c"}])
    popped = await import_sdk_sessions(str(sqlite_sdk_path), store)
    with sqlite3.connect(sqlite_sdk_path) as raw:  # a writer that committed below the record
        raw.execute(
            "INSERT INTO agent_messages (id, session_id, message_data) VALUES (0, 'alice', '{}')"
        )
    raw.close()

    late = await import_sdk_sessions(str(sqlite_sdk_path), store)

    assert "changed since the last import" in (session(popped, "alice").reason or "")
    assert "1 message(s) older than the last imported one" in (session(late, "alice").reason or "")
    assert len(await store.history("alice")) == 3
    sdk.close()


async def test_recovery_steps_over_rows_the_interrupted_run_skipped(
    sqlite_sdk_path: Path, store: SessionStore
) -> None:
    sdk = SQLiteSession("alice", sqlite_sdk_path)
    items: list[Any] = [{"role": "user", "content": n} for n in ("a", "b", "c")]
    await sdk.add_items(items[:1])
    with sqlite3.connect(sqlite_sdk_path) as raw:
        raw.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('alice', '{')")
    raw.close()
    await sdk.add_items(items[1:])
    await store.append("alice", items[:2])  # the interrupted run got past the bad row

    report = await import_sdk_sessions(str(sqlite_sdk_path), store)

    entry = session(report, "alice")
    assert (entry.recovered, entry.imported, entry.skipped) == (2, 1, 1)
    assert await store.load_context("alice") == items
    sdk.close()


# --------------------------------------------------------------- source errors


async def test_sources_that_are_not_sdk_databases_are_explained(
    tmp_path: Path, sqlite_url: str
) -> None:
    not_a_database = tmp_path / "notes.txt"
    not_a_database.write_text("hello, not a database\n" * 200)
    cases = {
        str(tmp_path / "missing.db"): "does not exist; expected the file your SQLiteSession",
        "sqlite://": "in-memory SQLite database",
        "mysql://user@host/db": "bad source URL: unsupported database URL scheme 'mysql'",
        str(not_a_database): "file is not a database",
        "postgresql+asyncpg://postgres@127.0.0.1:1/agents": "cannot connect to the source",
        "postgresql+asyncpg://postgres@127.0.0.1:5432/no_such_db_here": "does not exist",
        sqlite_url: "has no Agents SDK session tables",
    }
    async with SessionStore(sqlite_url) as store:
        for source, message in cases.items():
            with pytest.raises(ImportSourceError, match=message):
                await import_sdk_sessions(source, store)


async def test_a_messages_table_without_the_sdk_columns_is_explained(
    tmp_path: Path, sqlite_url: str
) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE agent_sessions (session_id TEXT PRIMARY KEY)")
        raw.execute("CREATE TABLE agent_messages (id INTEGER PRIMARY KEY, body TEXT)")
    raw.close()
    async with SessionStore(sqlite_url) as store:
        with pytest.raises(ImportSourceError, match=r"lacks column\(s\) session_id, message_data"):
            await import_sdk_sessions(str(path), store)


# ------------------------------------------------------------ session metadata


async def test_session_metadata_merges_keep_every_other_key(store: SessionStore) -> None:
    assert await store.session_metadata("s") is None
    assert await store.merge_session_metadata("s", {"a": 1}) is False
    await store.append("s", [{"role": "user", "content": "hi"}])
    before = await store.session_info("s")
    assert await store.session_metadata("s") == {}

    merged = await asyncio.gather(
        *(store.merge_session_metadata("s", {f"key{n}": n}) for n in range(20))
    )
    await store.merge_session_metadata("s", {"key0": {"nested": [1, 2]}})

    assert all(merged)
    assert await store.session_metadata("s") == {
        "key0": {"nested": [1, 2]},
        **{f"key{n}": n for n in range(1, 20)},
    }
    assert await store.session_info("s") == before  # bookkeeping, not a conversation write


# ------------------------------------------------------------------- property


def _item() -> st.SearchStrategy[dict[str, Any]]:
    text = st.text(max_size=40)
    call_id = st.sampled_from(["call_a", "call_b", "call_c"])
    return st.one_of(
        st.builds(lambda t: {"role": "user", "content": t}, text),
        st.builds(lambda t: {"role": "assistant", "content": t}, text),
        st.builds(
            lambda c, t: {"type": "function_call", "call_id": c, "name": "tool", "arguments": t},
            call_id,
            text,
        ),
        st.builds(
            lambda c, t: {"type": "function_call_output", "call_id": c, "output": t},
            call_id,
            text,
        ),
    )


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.lists(_item(), max_size=12), later=st.lists(_item(), max_size=12))
def test_any_item_list_round_trips_in_two_imports(
    first: list[dict[str, Any]], later: list[dict[str, Any]]
) -> None:
    async def scenario(folder: Path) -> None:
        sdk = SQLiteSession("s", folder / "sdk.db")
        async with SessionStore(f"sqlite:///{folder / 'target.db'}") as store:
            await sdk.add_items(first)  # type: ignore[arg-type]
            one = await import_sdk_sessions(str(folder / "sdk.db"), store)
            await sdk.add_items(later)  # type: ignore[arg-type]
            two = await import_sdk_sessions(str(folder / "sdk.db"), store)
            assert await SQLSession("s", store).get_items() == first + later
            assert one.total("imported") == len(first) and two.total("imported") == len(later)
            tokens = one.total("tokens") + two.total("tokens")
            assert tokens == (await store.context_tokens("s") if first + later else 0)
        sdk.close()

    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(scenario(Path(folder)))
