"""Messages are append-only in the database itself (migration 0007), on both backends.

UPDATE and DELETE of a message row are refused by a trigger unless the transaction is in
maintenance (retention, deleting a session, migrations), whoever sends them: the store's
own engine, a plain SQLite client, or SQL typed into psql.
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import asyncpg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from sessionstore import SessionStore
from sessionstore._schema import messages
from tests.support.citus import one_ddl_at_a_time
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


async def test_postgresql_maintenance_is_for_the_owner_and_the_roles_it_names(
    fresh_pg_url: str,
) -> None:
    """A role with UPDATE and DELETE on messages that sets the maintenance flag itself is
    refused (any role can set a custom setting); listed in maintenance_roles by the owner, it
    may; a look-alike list in a schema of its own changes nothing. A real login role."""
    role = f"ss_editor_{uuid.uuid4().hex[:8]}"
    url = make_url(fresh_pg_url)
    async with SessionStore(fresh_pg_url, create_tables=True) as store:
        await store.append("s", ITEMS)
        with one_ddl_at_a_time(fresh_pg_url):  # on Citus a role reaches every node
            async with store.engine.begin() as conn:
                for statement in (
                    f'CREATE ROLE "{role}" LOGIN',
                    f'GRANT USAGE ON SCHEMA public TO "{role}"',
                    f'GRANT SELECT, UPDATE, DELETE ON messages TO "{role}"',
                    f'GRANT CREATE ON DATABASE "{url.database}" TO "{role}"',
                ):
                    await conn.execute(sa.text(statement))
        editor = await asyncpg.connect(
            host=url.host, port=url.port, user=role, database=url.database
        )
        try:

            async def edit() -> None:
                async with editor.transaction():
                    # (Citus forwards it to the workers, whose shards' triggers check it.)
                    await editor.execute("SET LOCAL citus.propagate_set_commands = 'local'")
                    await editor.execute("SET LOCAL sessionstore.maintenance = 'on'")
                    await editor.execute("UPDATE messages SET tokens = 99")
                    await editor.execute("DELETE FROM messages")

            with pytest.raises(asyncpg.InsufficientPrivilegeError, match=f"role {role}"):
                await edit()
            await editor.execute(
                "CREATE SCHEMA mine; CREATE TABLE mine.maintenance_roles (role_name text);"
                f"INSERT INTO mine.maintenance_roles VALUES ('{role}');"
                "SET search_path = mine, public"
            )
            with pytest.raises(asyncpg.InsufficientPrivilegeError, match="maintenance refused"):
                await edit()
            assert await store.load_context("s") == ITEMS
            with pytest.raises(asyncpg.InsufficientPrivilegeError):  # the list is the owner's
                await editor.execute(f"INSERT INTO public.maintenance_roles VALUES ('{role}')")
            async with store.engine.begin() as conn:
                await conn.execute(
                    sa.text("INSERT INTO maintenance_roles VALUES (:role)"), {"role": role}
                )
            await edit()  # named by the owner: maintenance is its to enter
            assert await store.history("s") == []
        finally:
            await editor.close()
            with one_ddl_at_a_time(fresh_pg_url):
                async with store.engine.begin() as conn:
                    await conn.execute(sa.text(f'DROP OWNED BY "{role}" CASCADE'))
                    await conn.execute(sa.text(f'DROP ROLE "{role}"'))
