"""Plain SQL over a store's tables, as an analyst or a test would run it."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sessionstore import SessionStore
from sessionstore._append_only import maintenance
from sessionstore._database import open_database, resolve_url
from sessionstore._migrations import downgrade, upgrade

# Every table, children before parents (the order deletes must take).
TABLES = (
    "events",
    "archive_members",
    "archives",
    "compactions",
    "messages",
    "sessions",
    "retention_policies",
)


async def scalar(store: SessionStore, sql: str, **params: object) -> object:
    """Run plain SQL through the store's public AsyncEngine (what an analyst would do)."""
    async with store.engine.connect() as conn:
        return (await conn.execute(sa.text(sql), params)).scalar()


async def edit_rows(store: SessionStore, *statements: sa.Executable) -> None:
    """Change stored message rows as an operator with maintenance rights could (tampering,
    ageing): the append-only triggers refuse it to anyone else."""

    def run(conn: Connection) -> None:
        with maintenance(conn):
            for statement in statements:
                conn.execute(statement)

    async with store.engine.begin() as conn:
        await conn.run_sync(run)


async def migrate_to(url: str, revision: str, *, down: bool = False) -> None:
    """Upgrade (or with `down`, downgrade) the database at `url` to `revision`."""
    database = open_database(resolve_url(url))
    try:
        await (downgrade(database, revision) if down else upgrade(database, revision))
    finally:
        await database.dispose()
