"""Alembic environment: runs migrations over an async engine or a given connection.

`sessionstore._storage._migrations` passes a live connection (config.attributes["connection"]);
the `alembic` command line builds an engine from the URL in the config or
$SESSIONSTORE_URL, with the async drivers sessionstore uses.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from sessionstore._schema import metadata
from sessionstore._storage._database import open_database
from sessionstore._storage._urls import resolve_url

# Serializes concurrent migrators on PostgreSQL (any constant works; this one spells "sstore").
_PG_MIGRATION_LOCK = 0x7373746F7265


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        compare_type=True,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
        context.run_migrations()


async def _run_with_url(url: str | None) -> None:
    database = open_database(resolve_url(url))
    try:
        await database.write(_run)
    finally:
        await database.dispose()


def main() -> None:
    """Entry point Alembic calls when it loads this file."""
    if context.is_offline_mode():
        context.configure(
            url=str(resolve_url(context.config.get_main_option("sqlalchemy.url"))),
            target_metadata=metadata,
            literal_binds=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
    else:
        asyncio.run(_run_with_url(context.config.get_main_option("sqlalchemy.url")))


main()
