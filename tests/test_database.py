"""URL resolution and the SQLite settings the store's guarantees depend on."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from sessionstore import SessionStore, UnsupportedURLError
from sessionstore.database import DEFAULT_URL, URL_ENV, resolve_url


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
