"""URL resolution and the SQLite settings the store's guarantees depend on."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Awaitable

import pytest
import sqlalchemy as sa

from sessionstore import DatabaseNotFoundError, SessionStore, UnsupportedURLError
from sessionstore._storage._postgres._url import asyncpg_dsn
from sessionstore._storage._sqlite._database import SQLiteDatabase
from sessionstore._storage._urls import DEFAULT_URL, URL_ENV, resolve_url
from tests.support.database import write_lock_held


@pytest.mark.parametrize(
    ("given", "driver"),
    [
        ("sqlite:///x.db", "sqlite"),
        ("sqlite+aiosqlite:///x.db", "sqlite"),
        ("postgresql://u@h/db", "postgresql+asyncpg"),
        ("postgres://u@h/db", "postgresql+asyncpg"),
        ("postgresql+asyncpg://u@h/db", "postgresql+asyncpg"),
    ],
)
def test_urls_are_normalized_to_the_drivers_we_use(given: str, driver: str) -> None:
    assert resolve_url(given).drivername == driver


@pytest.mark.parametrize("bad", ["mysql://u@h/db", "mongodb://h/db", "redis://h", "oracle://h"])
def test_unknown_schemes_name_the_scheme_and_the_supported_ones(bad: str) -> None:
    with pytest.raises(UnsupportedURLError) as caught:
        resolve_url(bad)
    message = str(caught.value)
    assert bad.split(":")[0] in message
    assert "sqlite:///" in message and "postgresql+asyncpg://" in message


def test_unparseable_url_is_rejected_without_echoing_secrets() -> None:
    with pytest.raises(UnsupportedURLError, match="could not parse"):
        resolve_url("not a url at all")


def test_a_port_that_is_not_a_number_is_named() -> None:
    with pytest.raises(UnsupportedURLError, match=r"port .* is not a number"):
        resolve_url("postgresql://u:hunter2@h:notaport/db")


@pytest.mark.parametrize("mode", ["disable", "prefer", "require", "verify-full"])
def test_libpq_sslmode_reaches_both_drivers(mode: str) -> None:
    """SQLAlchemy hands asyncpg.connect every option as a keyword (`ssl`, never `sslmode`);
    a plain asyncpg DSN reads libpq's `sslmode`."""
    url = resolve_url(f"postgresql://u@h:5432/db?sslmode={mode}&target_session_attrs=read-write")
    assert url.query == {"ssl": mode, "target_session_attrs": "read-write"}
    dsn = asyncpg_dsn(url)
    assert f"sslmode={mode}" in dsn and "ssl=" not in dsn.replace("sslmode=", "")


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("postgresql://u@h/db?sslmode=bogus", "sslmode='bogus'"),
        ("postgresql://u@h/db?application_nam=x&timeout=5", "application_nam"),
    ],
)
def test_options_the_driver_would_reject_are_named_before_connecting(url: str, named: str) -> None:
    with pytest.raises(UnsupportedURLError) as caught:
        resolve_url(url)
    assert named in str(caught.value) and "timeout" not in str(caught.value).split("(")[0]


async def test_a_database_name_the_server_lacks_is_not_found(pg_url: str) -> None:
    missing = pg_url.rsplit("/", 1)[0] + "/sessionstore_no_such_database"
    with pytest.raises(DatabaseNotFoundError, match="no such database"):
        async with SessionStore(missing, create_tables=False) as store:
            await store.list_sessions()


def test_default_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(URL_ENV, raising=False)
    assert str(resolve_url(None)) == DEFAULT_URL
    monkeypatch.setenv(URL_ENV, "postgresql://u@h/db")
    assert resolve_url(None).drivername == "postgresql+asyncpg"


def test_store_masks_the_password_in_messages() -> None:
    store = SessionStore("postgresql://user:hunter2@127.0.0.1:1/db")
    assert "hunter2" not in store.safe_url


async def test_sqlite_runs_in_wal_with_foreign_keys(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url) as store:
        await store.append("s", [{"role": "user", "content": "x"}])
        with store.database.engine.connect() as conn:  # type: ignore[union-attr]
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000


async def test_in_memory_sqlite_store_works(tmp_path: object) -> None:
    async with SessionStore("sqlite://") as store:
        await store.append("s", [{"role": "user", "content": "x"}])
        assert await store.load_context("s") == [{"role": "user", "content": "x"}]
        with pytest.raises(ValueError, match="in-memory"):
            _ = store.engine


def test_invalid_synchronous_setting_is_rejected(sqlite_url: str) -> None:
    with pytest.raises(ValueError, match="sqlite_synchronous"):
        SessionStore(sqlite_url, sqlite_synchronous="SOMETIMES")


async def test_connection_refused_is_reported_not_swallowed() -> None:
    store = SessionStore("postgresql://postgres@127.0.0.1:1/none")
    with pytest.raises((OSError, sa.exc.OperationalError)):
        await store.load_context("s")
    await store.close()


# ------------------------------------------------------------------ cancellation


async def _cancelled_midway(store: SessionStore, write: Awaitable[object]) -> asyncio.Task[object]:
    """Start `write` while the lock is held, cancel it twice while it waits, then let it go."""
    async with write_lock_held(store, "s"):
        task = asyncio.ensure_future(write)
        await asyncio.sleep(0.2)
        task.cancel()
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.sleep(0.05)
        assert not task.done(), "the caller was released before its write finished"
    return task


async def test_a_cancelled_append_still_lands_whole_then_reports_the_cancellation(
    store: SessionStore,
) -> None:
    await store.append("s", [{"role": "user", "content": "first"}])
    items = [{"role": "user", "content": f"item {n}"} for n in range(3)]
    task = await _cancelled_midway(store, store.append("s", items))
    with pytest.raises(asyncio.CancelledError):
        await task
    context = await store.load_context("s")
    assert context == [{"role": "user", "content": "first"}, *items]
    info = await store.session_info("s")
    assert info is not None and info.last_seq == 4


async def test_a_cancelled_clear_still_lands(store: SessionStore) -> None:
    await store.append("s", [{"role": "user", "content": "gone soon"}])
    task = await _cancelled_midway(store, store.clear("s"))
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await store.load_context("s") == []


async def test_a_write_that_fails_after_its_caller_left_is_not_reported_as_unhandled(
    sqlite_url: str,
) -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    release = threading.Event()

    def failing(_conn: object) -> None:
        release.wait(5)
        raise RuntimeError("boom")

    async with SessionStore(sqlite_url, create_tables=True) as store:
        await store.ensure_ready()
        database = store.database
        assert isinstance(database, SQLiteDatabase)
        task = asyncio.ensure_future(database.write(failing))
        await asyncio.sleep(0.05)
        task.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(RuntimeError, match="boom"):  # an awaited failure still surfaces
            await database.write(failing)
    gc.collect()
    await asyncio.sleep(0)
    assert reported == []


async def test_a_timeout_around_a_write_waits_for_it(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url, create_tables=True) as store:
        await store.append("s", [{"role": "user", "content": "first"}])
        released = asyncio.Event()

        async def hold_lock_briefly() -> None:
            async with write_lock_held(store, "s"):
                released.set()
                await asyncio.sleep(0.3)

        holder = asyncio.create_task(hold_lock_briefly())
        await released.wait()
        start = asyncio.get_running_loop().time()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.1):
                await store.append("s", [{"role": "user", "content": "late"}])
        # The timeout fired at 0.1 s, but the caller was only let go once the write ended.
        assert asyncio.get_running_loop().time() - start >= 0.25
        await holder
        assert [item["content"] for item in await store.load_context("s")] == ["first", "late"]
