"""A store opened read-only reads, and changes nothing: no file created, no migration, no write.

The CLI's read commands open their store this way, so a typo in --url or an old database
cannot be "fixed" behind the user's back.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from sessionstore import (
    DatabaseNotFoundError,
    ReadOnlyStoreError,
    SchemaOutdatedError,
    SessionStore,
)
from sessionstore._storage._database import open_database
from sessionstore._storage._migrations import current_revision, downgrade
from sessionstore._storage._urls import resolve_url
from tests.support.database import scalar


def _digest(path: Path) -> str:
    """The file's bytes plus what its WAL holds (SQLite may create an empty WAL for a
    reader of a WAL-mode file; an empty one holds nothing)."""
    wal = path.with_name(path.name + "-wal")
    pending = wal.read_bytes() if wal.exists() else b""
    return hashlib.sha256(path.read_bytes()).hexdigest() + hashlib.sha256(pending).hexdigest()


async def test_a_missing_sqlite_file_is_an_error_and_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "sessions.db"
    with pytest.raises(DatabaseNotFoundError, match=str(missing)) as error:
        SessionStore(f"sqlite:///{missing}", read_only=True)
    assert "sessionstore migrate" in str(error.value)
    assert not missing.exists() and not missing.parent.exists()


async def test_reads_work_and_writes_are_refused_before_the_database(
    db_url: str, tmp_path: Path
) -> None:
    async with SessionStore(db_url, create_tables=True) as writer:
        await writer.append("s", [{"role": "user", "content": "hi [bold]x[/]"}])
    path = Path(resolve_url(db_url).database or "")
    before = _digest(path) if db_url.startswith("sqlite") else ""
    async with SessionStore(db_url, read_only=True) as store:
        assert store.read_only
        assert await store.load_context("s") == [{"role": "user", "content": "hi [bold]x[/]"}]
        assert [info.session_id for info in await store.list_sessions()] == ["s"]
        with pytest.raises(ReadOnlyStoreError, match="opened read-only"):
            await store.append("s", [{"role": "user", "content": "more"}])
        with pytest.raises(ReadOnlyStoreError):
            await store.clear("s")
        # The database itself refuses a write through the store's engine too.
        with pytest.raises(DBAPIError):
            async with store.engine.begin() as conn:
                await conn.execute(sa.text("DELETE FROM events"))
        assert await scalar(store, "SELECT count(*) FROM messages") == 1
    if db_url.startswith("sqlite"):
        assert _digest(path) == before


async def test_an_old_database_is_refused_not_migrated(fresh_db_url: str) -> None:
    async with SessionStore(fresh_db_url, create_tables=True):
        pass
    database = open_database(resolve_url(fresh_db_url))
    try:
        await downgrade(database, "0001")
        with pytest.raises(SchemaOutdatedError, match="sessionstore migrate"):
            async with SessionStore(fresh_db_url, read_only=True):
                pass
        assert await current_revision(database) == "0001"
    finally:
        await database.dispose()


def test_a_read_only_store_cannot_be_asked_to_create_tables(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    path.touch()
    with pytest.raises(TypeError, match="create_tables"):
        SessionStore(f"sqlite:///{path}", read_only=True, create_tables=True)
