"""Messages are append-only in the database itself (migration 0007), on both backends.

UPDATE and DELETE of a message row are refused by a trigger unless the transaction is in
maintenance (retention, deleting a session, migrations), whoever sends them: the store's
own engine, a plain SQLite client, or SQL typed into psql.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from sessionstore import SessionStore
from sessionstore._schema import messages
from tests.support.database import edit_rows

ITEMS = [{"role": "user", "content": "keep me"}, {"role": "assistant", "content": "kept"}]


@pytest.mark.parametrize(
    "statement",
    [
        messages.update().values(payload=None),
        messages.update().where(messages.c.seq == 1).values(kind="tombstone"),
        messages.delete().where(messages.c.seq == 2),
    ],
    ids=["update-payload", "update-kind", "delete"],
)
async def test_no_one_rewrites_history_outside_maintenance(
    store: SessionStore, statement: sa.Executable
) -> None:
    await store.append("s", ITEMS)
    with pytest.raises(DBAPIError, match="append-only"):
        async with store.engine.begin() as conn:
            await conn.execute(statement)
    assert await store.load_context("s") == ITEMS


async def test_maintenance_may_change_rows_and_deleting_a_session_still_works(
    store: SessionStore,
) -> None:
    await store.append("s", ITEMS)
    await edit_rows(store, messages.update().where(messages.c.seq == 2).values(tokens=99))
    assert [row.tokens for row in await store.history("s")][1] == 99
    assert await store.delete_session("s")
    assert await store.history("s") == []
    await store.append("s", ITEMS[:1])  # the flag did not outlive its transaction
    with pytest.raises(DBAPIError, match="append-only"):
        async with store.engine.begin() as conn:
            await conn.execute(messages.delete())


async def test_a_sqlite_client_other_than_the_store_cannot_change_rows(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SessionStore(f"sqlite:///{path}") as store:
        await store.append("s", ITEMS)
    with sqlite3.connect(path) as plain, pytest.raises(sqlite3.OperationalError):
        plain.execute("UPDATE messages SET payload = NULL")
    with sqlite3.connect(path) as plain:
        assert plain.execute("SELECT count(*) FROM messages WHERE payload IS NULL").fetchone() == (
            0,
        )


async def test_postgresql_refuses_truncate_too(fresh_pg_url: str) -> None:
    async with SessionStore(fresh_pg_url, create_tables=True) as store:
        await store.append("s", ITEMS)
        with pytest.raises(DBAPIError, match="append-only: TRUNCATE"):
            async with store.engine.begin() as conn:
                await conn.execute(sa.text("TRUNCATE messages CASCADE"))
        assert await store.load_context("s") == ITEMS
