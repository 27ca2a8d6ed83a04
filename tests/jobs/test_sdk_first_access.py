"""Swapping the Agents SDK's store for SQLSession keeps the agent's memory (issue #33).

The SDK's own classes (SQLiteSession, SQLAlchemySession with default and custom
table names, AdvancedSQLiteSession) write real databases, SQLite and PostgreSQL;
SQLSession then opens the same database and must return the same items,
importing each session once (threads and processes racing), never changing a
byte of the SDK's tables.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from agents import SQLiteSession
from agents.extensions.memory import AdvancedSQLiteSession, SQLAlchemySession
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from sessionstore import Keyring, LocalKey, SessionStore, SQLSession
from sessionstore._jobs._importer import import_sdk_sessions
from sessionstore._jobs._sdk_first_access import IMPORT_EVENT, SdkHistory, SdkTables
from sessionstore._jobs._sdk_source import IMPORT_KEY
from sessionstore._schema import metadata as schema_metadata
from tests.support.cli import run
from tests.support.sdk_runs import converse

PROMPTS = ("hi", "what is the weather in Paris?", "héllo ✓ thanks")
CUSTOM = SdkTables("my_sessions", "my_messages")


@dataclass
class Sdk:
    """A database the SDK wrote: its URL for SQLAlchemy, and the SQLite file if it is one."""

    url: str  # an async SQLAlchemy URL
    path: Path | None
    engines: list[AsyncEngine] = field(default_factory=list)

    def engine(self) -> AsyncEngine:
        engine = create_async_engine(self.url)
        self.engines.append(engine)
        return engine

    async def dispose(self) -> None:
        for engine in self.engines:
            await engine.dispose()


@pytest.fixture
async def sdk(fresh_db_url: str) -> AsyncIterator[Sdk]:
    """An empty database of its own: a SQLite file, or a scratch PostgreSQL database."""
    if fresh_db_url.startswith("sqlite"):
        path = Path(fresh_db_url.removeprefix("sqlite:///"))
        database = Sdk(f"sqlite+aiosqlite:///{path}", path)
    else:
        database = Sdk(fresh_db_url, None)
    yield database
    await database.dispose()


async def _sdk_tables(engine: AsyncEngine) -> list[str]:
    """Every table that is not sessionstore's: what the SDK created."""
    try:
        async with engine.connect() as conn:
            names = await conn.run_sync(lambda sync: sa.inspect(sync).get_table_names())
    finally:
        await engine.dispose()
    ours = {table.name for table in schema_metadata.sorted_tables} | {"alembic_version"}
    return sorted(name for name in names if name not in ours and not name.startswith("search"))


def _columns(conn: sa.Connection, name: str) -> list[str]:
    return [column["name"] for column in sa.inspect(conn).get_columns(name)]


async def dump(url: str, tables: list[str]) -> dict[str, Any]:
    """Every row of `tables` (all columns, in a fixed order) and, on SQLite, their table and
    index definitions: equal dumps mean the tables were not touched."""
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            found: dict[str, Any] = {}
            for name in tables:
                columns: list[str] = await conn.run_sync(_columns, name)
                query: Any = sa.select(*map(sa.column, columns)).select_from(sa.table(name))
                rows = (await conn.execute(query.order_by(*map(sa.column, columns)))).all()
                found[name] = [tuple(map(str, row)) for row in rows]
            if engine.dialect.name == "sqlite":
                schema = sa.text(
                    "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
                )
                found["sqlite_master"] = [
                    tuple(row) for row in await conn.execute(schema) if row[2] in tables
                ]
            return found
    finally:
        await engine.dispose()


async def _count(url: str, sql: str, **params: Any) -> int:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            return int((await conn.execute(sa.text(sql), params)).scalar_one())
    finally:
        await engine.dispose()


async def _events(url: str, session_id: str) -> list[dict[str, Any]]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            query = sa.text("SELECT payload FROM events WHERE event = :e AND session_id = :s")
            rows = (await conn.execute(query, {"e": IMPORT_EVENT, "s": session_id})).scalars()
            return [row if isinstance(row, dict) else json.loads(row) for row in rows]
    finally:
        await engine.dispose()


async def _write_alchemy(sdk: Sdk, tables: SdkTables, ids: tuple[str, ...]) -> dict[str, Any]:
    """SQLAlchemySession conversations (the SDK's Runner, real turns); their items."""
    engine = sdk.engine()
    items = {}
    for session_id in ids:
        session = SQLAlchemySession(
            session_id,
            engine=engine,
            create_tables=True,
            sessions_table=tables.sessions_table,
            messages_table=tables.messages_table,
        )
        await converse(session, PROMPTS if session_id != ids[-1] else PROMPTS[:1])
        items[session_id] = await session.get_items()
    return items


# ------------------------------------------------------------------- SQLiteSession


async def test_a_sqlite_session_file_keeps_its_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "conversations.db"
    sdk_session = SQLiteSession("u5", path)
    await converse(sdk_session, PROMPTS)
    other = SQLiteSession("u6", path)
    await converse(other, PROMPTS[:1])
    expected = await sdk_session.get_items()
    assert len(expected) == 8  # three turns, one with a tool round trip
    url = f"sqlite+aiosqlite:///{path}"
    before = await dump(url, ["agent_sessions", "agent_messages"])

    caplog.set_level(logging.INFO, logger="sessionstore.import")
    session = SQLSession("u5", path)  # the one changed line
    try:
        assert await session.get_items() == expected
        assert await session.get_items(limit=2) == expected[-2:]
        await session.add_items([{"role": "user", "content": "after the swap"}])
        assert (await session.get_items())[:-1] == expected
    finally:
        await session.close()
    again = SQLSession("u5", path)  # a new process's object: imports nothing more
    try:
        assert len(await again.get_items()) == len(expected) + 1
    finally:
        await again.close()

    assert await dump(url, ["agent_sessions", "agent_messages"]) == before
    assert await sdk_session.get_items() == expected  # the SDK still reads what it wrote
    sdk_session.close()
    other.close()
    [event] = await _events(url, "u5")
    assert event["items"] == 8 and event["source_table"] == "agent_messages"
    assert event["source"] == f"sqlite:///{path.resolve()}#agent_messages"
    assert await _events(url, "u6") == []  # never opened: still only in the SDK's tables
    logged = [r.getMessage() for r in caplog.records if r.name == "sessionstore.import"]
    assert logged == [
        f"imported Agents SDK session 'u5': 8 item(s) from table 'agent_messages' of "
        f"sqlite:///{path.resolve()}"
    ]


async def test_the_import_line_goes_to_the_logger_given_as_to_advanced_sqlite_session(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "advanced.db"
    sdk_session = AdvancedSQLiteSession(session_id="u", db_path=path, create_tables=True)
    await sdk_session.add_items([{"role": "user", "content": "hi"}])
    sdk_session.close()
    caplog.set_level(logging.INFO)
    session = SQLSession("u", db_path=path, logger=logging.getLogger("myapp.memory"))
    try:
        assert await session.get_items() == [{"role": "user", "content": "hi"}]
    finally:
        await session.close()
    assert [(r.name, r.levelno) for r in caplog.records if "imported" in r.getMessage()] == [
        ("myapp.memory", logging.INFO)
    ]


async def test_the_bulk_import_sees_a_first_access_import_as_up_to_date(tmp_path: Path) -> None:
    path = tmp_path / "conversations.db"
    for session_id in ("u5", "u6"):
        sdk_session = SQLiteSession(session_id, path)
        await converse(sdk_session, PROMPTS)
        sdk_session.close()
    session = SQLSession("u5", path)
    try:
        assert len(await session.get_items()) == 8
        metadata = await session.store.session_metadata("u5")
        assert metadata is not None and metadata[IMPORT_KEY]["source_rows"] == 8
        report = await import_sdk_sessions(str(path), session.store)
    finally:
        await session.close()
    statuses = {entry.session_id: (entry.status, entry.imported) for entry in report.sessions}
    assert statuses == {"u5": ("up_to_date", 0), "u6": ("imported", 8)}


async def test_a_session_the_store_already_has_is_not_mixed_with_the_sdk_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "conversations.db"
    sdk_session = SQLiteSession("u7", path)
    await converse(sdk_session, PROMPTS[:1])
    sdk_session.close()
    mine = [{"role": "user", "content": "written here first"}]
    async with SessionStore(f"sqlite:///{path}") as store:
        await store.append("u7", mine)
    session = SQLSession("u7", path)
    try:
        assert await session.get_items() == mine
    finally:
        await session.close()
    assert await _events(f"sqlite+aiosqlite:///{path}", "u7") == []


async def test_rows_that_cannot_be_stored_are_skipped_and_named_in_the_event(
    tmp_path: Path,
) -> None:
    path = tmp_path / "conversations.db"
    sdk_session = SQLiteSession("u8", path)
    await converse(sdk_session, PROMPTS[:1])
    expected = await sdk_session.get_items()
    # A corrupt row, as a crashed writer leaves it: the SDK itself skips it on read.
    with sdk_session._locked_connection() as conn:
        conn.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('u8', '{oops')")
        conn.commit()
    assert await sdk_session.get_items() == expected
    sdk_session.close()
    session = SQLSession("u8", path)
    try:
        assert await session.get_items() == expected
    finally:
        await session.close()
    [event] = await _events(f"sqlite+aiosqlite:///{path}", "u8")
    assert event["severity"] == "warning" and event["items"] == len(expected)
    assert [problem["message_id"] for problem in event["skipped"]] == [len(expected) + 1]


async def test_a_shared_encrypting_store_imports_sealed_and_chained_rows(tmp_path: Path) -> None:
    path = tmp_path / "conversations.db"
    sdk_session = SQLiteSession("u5", path)
    await converse(sdk_session, PROMPTS)
    expected = await sdk_session.get_items()
    sdk_session.close()
    keyring = Keyring([LocalKey.generate("k1")])
    async with SessionStore(f"sqlite:///{path}", keyring=keyring, encrypt_payloads=True) as store:
        assert await SQLSession("u5", store).get_items() == expected
        assert (await store.verify_history("u5")).problems == []
    query = "SELECT count(*) FROM messages WHERE session_id = 'u5' AND payload_sealed IS NOT NULL"
    assert await _count(f"sqlite+aiosqlite:///{path}", query) == len(expected)


# ------------------------------------------------------------------- SQLAlchemySession


@pytest.mark.parametrize("tables", [SdkTables(), CUSTOM], ids=["default_names", "custom_names"])
async def test_a_sqlalchemy_session_database_keeps_its_memory(sdk: Sdk, tables: SdkTables) -> None:
    expected = await _write_alchemy(sdk, tables, ("u1", "u2"))
    assert len(expected["u1"]) == 8 and len(expected["u2"]) == 2
    names = [tables.sessions_table, tables.messages_table]
    assert await _sdk_tables(sdk.engine()) == sorted(names)
    before = await dump(sdk.url, names)

    options: dict[str, Any] = {
        "sessions_table": tables.sessions_table,
        "messages_table": tables.messages_table,
    }
    session = SQLSession("u1", engine=sdk.engine(), create_tables=True, **options)
    try:
        assert await session.get_items() == expected["u1"]
        await session.add_items([{"role": "user", "content": "after the swap"}])
    finally:
        await session.close()
    url_session = SQLSession.from_url("u2", url=sdk.url, **options)
    try:
        assert await url_session.get_items() == expected["u2"]
        assert await url_session.pop_item() == expected["u2"][-1]
    finally:
        await url_session.close()

    assert await dump(sdk.url, names) == before
    assert len(await _events(sdk.url, "u1")) == 1 and len(await _events(sdk.url, "u2")) == 1
    if tables != SdkTables():  # the default names find nothing: the options are what counted
        unnamed = SQLSession("u1-other", engine=sdk.engine())
        assert await unnamed.get_items() == []
        assert SdkHistory.of(unnamed.store)._found is None


async def test_import_sdk_false_shows_nothing_and_imports_nothing(sdk: Sdk) -> None:
    expected = await _write_alchemy(sdk, SdkTables(), ("u1", "u2"))
    before = await dump(sdk.url, ["agent_sessions", "agent_messages"])
    session = SQLSession("u1", engine=sdk.engine(), create_tables=True, import_sdk=False)
    assert await session.get_items() == []
    assert await session.store.session_info("u1") is None
    await session.add_items([{"role": "user", "content": "fresh start"}])
    assert await _events(sdk.url, "u1") == []
    imported = SQLSession("u2", engine=sdk.engine())  # the default: imported
    assert await imported.get_items() == expected["u2"]
    assert await dump(sdk.url, ["agent_sessions", "agent_messages"]) == before


# ------------------------------------------------------------------- AdvancedSQLiteSession


async def test_an_advanced_sqlite_session_keeps_its_main_branch(tmp_path: Path) -> None:
    path = tmp_path / "advanced.db"
    advanced = AdvancedSQLiteSession(session_id="u9", db_path=path, create_tables=True)
    await converse(advanced, PROMPTS)
    main = await advanced.get_items()
    await advanced.create_branch_from_turn(2, "retry")
    await converse(advanced, ("a different second question",))
    branch = await advanced.get_items()
    await advanced.switch_to_branch("main")
    assert await advanced.get_items() == main and branch != main
    url = f"sqlite+aiosqlite:///{path}"
    sdk_tables = await _sdk_tables(create_async_engine(url))
    assert {"agent_messages", "message_structure", "turn_usage"} <= set(sdk_tables)
    before = await dump(url, sdk_tables)
    advanced.close()

    session = SQLSession("u9", path)
    try:
        assert await session.get_items() == main  # not the branch's rows mixed in
    finally:
        await session.close()
    assert await dump(url, sdk_tables) == before
    [event] = await _events(url, "u9")
    assert event["items"] == len(main)


# ------------------------------------------------------------------- races


def _url_for(sdk: Sdk) -> str:
    return f"sqlite:///{sdk.path}" if sdk.path is not None else sdk.url


RACED = tuple(f"race-{n}" for n in range(10))


async def _prepared(sdk: Sdk) -> tuple[dict[str, Any], dict[str, Any]]:
    """Sessions the SDK wrote, the store's schema already there, the SDK's dump."""
    expected = await _write_alchemy(sdk, SdkTables(), (*RACED, "other"))
    async with SessionStore(_url_for(sdk), create_tables=True):
        pass
    return expected, await dump(sdk.url, ["agent_sessions", "agent_messages"])


async def _imported_once(sdk: Sdk, expected: dict[str, Any], before: dict[str, Any]) -> None:
    for session_id in RACED:
        assert len(await _events(sdk.url, session_id)) == 1, session_id
        rows = "SELECT count(*) FROM messages WHERE session_id = :sid"
        assert await _count(sdk.url, rows, sid=session_id) == len(expected[session_id])
        last = "SELECT last_seq FROM sessions WHERE session_id = :sid"
        assert await _count(sdk.url, last, sid=session_id) == len(expected[session_id])
    assert await dump(sdk.url, ["agent_sessions", "agent_messages"]) == before


async def _read_all(url: str) -> dict[str, Any]:
    """Every raced session's items, all asked for at once (one store, like a server)."""
    store = SessionStore(url)
    try:
        sessions = [SQLSession(session_id, store) for session_id in RACED]
        found = await asyncio.gather(*(session.get_items() for session in sessions))
        return dict(zip(RACED, found, strict=True))
    finally:
        await store.close()


async def test_eight_threads_opening_it_at_once_import_it_once(sdk: Sdk) -> None:
    expected, before = await _prepared(sdk)
    url = _url_for(sdk)
    start = threading.Barrier(8)
    seen: list[Any] = []
    errors: list[BaseException] = []

    async def one() -> dict[str, Any]:
        start.wait(timeout=30)
        return await _read_all(url)

    def thread() -> None:
        try:
            seen.append(asyncio.run(one()))
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=thread) for _ in range(8)]
    for started in threads:
        started.start()
    for started in threads:
        started.join(timeout=120)
    assert errors == []
    raced = {session_id: expected[session_id] for session_id in RACED}
    assert seen == [raced] * 8
    await _imported_once(sdk, expected, before)


# A process that loads everything, says so, waits for "go", then reads every raced session.
_PROCESS = """
import asyncio, json, sys
from sessionstore import SessionStore, SQLSession

async def read_all(url, ids):
    store = SessionStore(url)
    try:
        sessions = [SQLSession(session_id, store) for session_id in ids]
        return await asyncio.gather(*(session.get_items() for session in sessions))
    finally:
        await store.close()

print("ready", flush=True)
sys.stdin.readline()
ids = sys.argv[2:]
print(json.dumps(dict(zip(ids, asyncio.run(read_all(sys.argv[1], ids))))), flush=True)
"""


async def test_two_processes_opening_it_at_once_import_it_once(sdk: Sdk) -> None:
    expected, before = await _prepared(sdk)
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _PROCESS,
            _url_for(sdk),
            *RACED,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for _ in range(2)
    ]
    for process in processes:  # both loaded and waiting: then both are let go at once
        assert process.stdout is not None
        assert await asyncio.wait_for(process.stdout.readline(), 120) == b"ready\n"
    for process in processes:
        assert process.stdin is not None
        process.stdin.write(b"go\n")
    outputs = await asyncio.wait_for(
        asyncio.gather(*(process.communicate() for process in processes)), 120
    )
    assert [process.returncode for process in processes] == [0, 0], outputs
    raced = {session_id: expected[session_id] for session_id in RACED}
    assert [json.loads(out) for out, _ in outputs] == [raced, raced]
    await _imported_once(sdk, expected, before)


# ------------------------------------------------------------------- cost, doctor


async def test_after_the_first_access_the_check_costs_a_set_lookup(tmp_path: Path) -> None:
    path = tmp_path / "conversations.db"
    sdk_session = SQLiteSession("u5", path)
    await converse(sdk_session, PROMPTS[:1])
    sdk_session.close()
    async with SessionStore(f"sqlite:///{path}") as store:
        history = SdkHistory.of(store)
        assert SdkHistory.of(store) is history  # one per store and table names
        await history.ensure("u5")
        assert await store.session_info("u5") is not None
        rounds = 20_000
        started = time.perf_counter()
        for _ in range(rounds):
            await history.ensure("u5")
        per_call = (time.perf_counter() - started) / rounds
    assert per_call < 20e-6, f"{per_call * 1e6:.1f} µs per checked access"


@pytest.mark.parametrize("tables", [SdkTables(), CUSTOM], ids=["default_names", "custom_names"])
async def test_doctor_lists_the_sdk_tables_and_what_is_still_only_there(
    sdk: Sdk, tables: SdkTables
) -> None:
    await _write_alchemy(sdk, tables, ("d1", "d2", "d3"))
    names: dict[str, Any] = {
        "sessions_table": tables.sessions_table,
        "messages_table": tables.messages_table,
    }
    session = SQLSession.from_url("d1", url=sdk.url, create_tables=True, **names)
    try:
        assert len(await session.get_items()) == 8
    finally:
        await session.close()
    args = ("doctor", "--url", _url_for(sdk), "--json")
    # The command runs its own event loop: off this test's.
    result = await asyncio.to_thread(run, *args, env={"SESSIONSTORE_KEYS": ""})
    checks = {check["name"]: check for check in json.loads(result.stdout)}
    detail = checks["agents sdk tables"]["detail"]
    assert checks["agents sdk tables"]["ok"]
    assert detail.startswith(
        f"{tables.sessions_table}/{tables.messages_table}: 3 session(s), 2 still only there "
        "(10 message(s))"
    ), detail
    assert "`sessionstore import`" in detail


def test_doctor_says_none_without_sdk_tables(sqlite_url: str) -> None:
    async def make() -> None:
        async with SessionStore(sqlite_url):
            pass

    asyncio.run(make())
    result = run("doctor", "--url", sqlite_url, "--json", env={"SESSIONSTORE_KEYS": ""})
    checks = {check["name"]: check for check in json.loads(result.stdout)}
    assert checks["agents sdk tables"] == {
        "name": "agents sdk tables",
        "ok": True,
        "detail": "none",
        "warning": False,
    }
