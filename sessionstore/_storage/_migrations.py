"""Programmatic access to the Alembic migrations: locate, inspect, upgrade, downgrade.

The store checks the schema once when it opens, so a missing table or a database
migrated by a newer release fails fast with a message that names the fix.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._errors import (
    SchemaError,
    SchemaMissingError,
    SchemaOutdatedError,
    SchemaTooNewError,
    StoreTimeoutError,
)
from .._loops import KeyedLocks
from .._schema import VIEWS, metadata
from ._append_only import maintenance
from ._database import Database
from ._head_file import head_schema
from ._head_schema import create_at_head, is_empty
from ._outcomes import DEFAULT_TIMEOUT_S
from ._postgres._citus import distribute, has_citus, is_distributed
from ._revisions import alembic_config, head_revision, known_revisions, script_location

_MIGRATION_LOCKS: Final = KeyedLocks("the schema migration of")
# Any constant would do: it only has to be the same in every process migrating this database.
_PG_MIGRATION_KEY: Final = 0x5E55_1015
_RETRY_PAUSE_S: Final = 0.05


def _agents_sdk_tables(connection: Connection) -> list[str]:
    """Tables shaped like the Agents SDK's messages table (its `session_id` and
    `message_data` columns), whatever their names: a database the SDK wrote."""
    inspector = sa.inspect(connection)
    return [
        name
        for name in sorted(inspector.get_table_names())
        if {"session_id", "message_data"} <= {c["name"] for c in inspector.get_columns(name)}
    ]


def _current(connection: Connection) -> str | None:
    """The stamped revision, read as Alembic keeps it (one row of `alembic_version`), without
    loading Alembic for it."""
    if not sa.inspect(connection).has_table("alembic_version"):
        return None
    rows = connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all()
    if len(rows) > 1:
        raise SchemaError(
            f"alembic_version holds several revisions ({', '.join(sorted(rows))}): the "
            "schema was changed outside sessionstore; nothing was changed"
        )
    return str(rows[0]) if rows else None


def _state(connection: Connection) -> tuple[str | None, dict[str, set[str]], bool]:
    """The revision, for each of our tables that exists, its columns, and whether Citus
    distributes them.

    The revision is read first: SQLite reads here are not one snapshot, and a migration
    commits tables and revision together, so a revision at head means the tables read
    after it are the migrated ones (read the other way round, a store racing another
    process's first migration saw "stamped at head, tables missing").
    """
    revision = _current(connection)
    inspector = sa.inspect(connection)
    existing = set(inspector.get_table_names())
    columns = {
        name: {column["name"] for column in inspector.get_columns(name)}
        for name in metadata.tables
        if name in existing
    }
    return revision, columns, "messages" in existing and is_distributed(connection)


async def current_revision(database: Database) -> str | None:
    """The revision the database is at, or None when it was never migrated."""
    return await database.read(_current)


def _migrate(connection: Connection, direction: str, revision: str) -> None:
    from alembic import command

    config = alembic_config()
    config.attributes["connection"] = connection
    if has_citus(connection):  # a migration's triggers, on distributed tables (_citus.py)
        connection.exec_driver_sql("SET LOCAL citus.enable_unsafe_triggers = on")
    with maintenance(connection):  # migrations may rewrite message rows
        if direction == "up":
            command.upgrade(config, revision)
        else:
            command.downgrade(config, revision)


async def upgrade(database: Database, revision: str = "head") -> None:
    """Upgrade the database to `revision` (default: the newest), in one transaction; a new
    database is created at the newest schema directly, not through the chain."""
    head = head_revision()
    if revision in ("head", head):
        await database.write(_upgrade_if_behind, head)
    else:
        await database.write(_migrate, "up", revision)


async def upgrade_through_chain(database: Database) -> None:
    """Upgrade to the newest revision through every migration, even a new database (what
    the head schema is generated from and compared with)."""
    await database.write(run_chain)


def run_chain(connection: Connection) -> None:
    """Inside the caller's transaction: every migration up to the newest."""
    _migrate(connection, "up", "head")


async def downgrade(database: Database, revision: str) -> None:
    """Downgrade the database to `revision` ("base" removes every table)."""
    await database.write(_migrate, "down", revision)


QUERY_ROLE_NAME: Final = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _grant_query_role(connection: Connection, role: str) -> None:
    exists = connection.execute(
        sa.text("SELECT 1 FROM pg_roles WHERE rolname = :role"), {"role": role}
    ).first()
    if exists is None:
        connection.exec_driver_sql(f'CREATE ROLE "{role}" NOLOGIN')
    connection.exec_driver_sql(f'GRANT "{role}" TO CURRENT_USER')  # so SET ROLE may use it
    connection.exec_driver_sql(f'GRANT USAGE ON SCHEMA public TO "{role}"')
    for table in sorted({*metadata.tables, *VIEWS}):
        if table != "alembic_version":
            connection.exec_driver_sql(f'GRANT SELECT ON "{table}" TO "{role}"')


async def create_query_role(database: Database, role: str) -> None:
    """PostgreSQL: a NOLOGIN role that may only SELECT the documented tables, for
    `sessionstore query --role` (no server files, programs or other schemas)."""
    if not QUERY_ROLE_NAME.match(role):
        raise ValueError(f"{role!r} is not a role name: lower-case letters, digits and _")
    await database.write(_grant_query_role, role)


def _note_citus(database: Database, distributed: bool) -> None:
    """Tell a PostgreSQL runner whether the tables are distributed: its appends and branch
    reads then take Citus' routed paths. (Imported here: a SQLite program never loads the
    PostgreSQL runner and its driver.)"""
    if database.dialect == "postgresql":
        from ._postgres._database import PostgresDatabase

        assert isinstance(database, PostgresDatabase)
        database.citus = distributed


async def ensure_schema(
    database: Database, *, create: bool, url_hint: str, timeout_s: float = DEFAULT_TIMEOUT_S
) -> dict[str, str | None] | None:
    """Fail fast (or migrate, when `create`) unless the database is at our head revision.

    Returns what a migration did ({"from_revision", "to_revision"}), or None when the
    schema was already current. Stores, threads and processes opening a new database
    at once migrate it once: in-process they queue on a lock per database, across
    processes the migration's transaction holds the database's write lock (SQLite)
    or an advisory lock (PostgreSQL) and re-reads the revision once it has it.
    """
    current, tables, distributed = await database.read(_state)
    _note_citus(database, distributed)
    head = head_revision()
    if current == head:
        _check_tables(tables, url_hint, head)
        return None
    if current is not None and current not in known_revisions():
        raise SchemaTooNewError(
            f"the database at {url_hint} is at schema revision {current!r}, which this "
            f"sessionstore (newest revision {head!r}) does not know: it was migrated by a "
            "newer release. Upgrade sessionstore; nothing was changed."
        )
    if create:
        async with _MIGRATION_LOCKS(url_hint).hold(timeout_s):
            done = await _upgrade_once(database, head, url_hint, timeout_s)
        if database.dialect == "postgresql":
            _note_citus(database, await database.read(is_distributed))
        return done
    if current is None:
        sdk_tables = await database.read(_agents_sdk_tables)
        also = (
            f" It holds the Agents SDK's tables ({', '.join(sdk_tables)}): after migrating, "
            f"`sessionstore import '{url_hint}' --url '{url_hint}'` brings their sessions over "
            "(SQLSession imports each one when it first opens it)."
            if sdk_tables
            else ""
        )
        raise SchemaMissingError(
            f"the sessionstore tables do not exist in {url_hint}. Run "
            f"`sessionstore migrate --url '{url_hint}'` or pass create_tables=True.{also}"
        )
    raise SchemaOutdatedError(
        f"the database at {url_hint} is at schema revision {current!r} but this code needs "
        f"{head!r}. Run `sessionstore migrate --url '{url_hint}'` (or pass create_tables=True)."
    )


async def _upgrade_once(
    database: Database, head: str, url_hint: str, timeout_s: float
) -> dict[str, str | None] | None:
    """Migrate, waiting up to `timeout_s` for another process migrating the same file.

    A SQLite busy timeout is sized for a write, not for another process's whole
    migration (seconds on a loaded machine): a store opening a new file while another
    migrates it would fail, though all it has to do is find the schema current.
    """
    if database.dialect != "sqlite":  # the advisory lock waits, bounded by command_timeout
        return await database.write(_upgrade_if_behind, head)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return await database.write(_upgrade_if_behind, head)
        except StoreTimeoutError:
            if time.monotonic() >= deadline:
                raise StoreTimeoutError(
                    f"waited {timeout_s:g} s for another process migrating {url_hint} to "
                    "finish (raise timeout_s to wait longer); nothing was changed"
                ) from None
            await asyncio.sleep(_RETRY_PAUSE_S)  # a zero busy timeout must not spin


def _check_tables(tables: dict[str, set[str]], url_hint: str, head: str) -> None:
    missing = sorted(set(metadata.tables) - set(tables))
    missing += sorted(
        f"{name}.{column.name}"
        for name, table in metadata.tables.items()
        if name in tables
        for column in table.columns
        if column.name not in tables[name]
    )
    if missing:
        raise SchemaMissingError(
            f"{', '.join(missing)} missing from {url_hint} although it is stamped at "
            f"revision {head!r}: the schema was changed outside sessionstore. Restore "
            "from a backup; nothing was changed."
        )


def _upgrade_if_behind(connection: Connection, head: str) -> dict[str, str | None] | None:
    """Inside the migration's transaction: upgrade unless another writer already did."""
    if connection.dialect.name == "postgresql":
        lock = sa.text("SELECT pg_advisory_xact_lock(:key)")
        connection.execute(lock, {"key": _PG_MIGRATION_KEY})
    current = _current(connection)  # SQLite: read under BEGIN IMMEDIATE's write lock
    if current == head:
        return None
    # On a Citus coordinator a new schema is distributed in the same transaction; one that
    # already was gets the Citus versions of its functions again after the upgrade.
    citus = has_citus(connection) and (current is None or is_distributed(connection))
    if not (current is None and created_at_head(connection, head)):
        _migrate(connection, "up", head)
    if citus:
        distribute(connection)
    return {"from_revision": current, "to_revision": head}


def _distribute_at_head(connection: Connection, head: str) -> bool:
    """Inside one transaction: upgrade to `head` if behind, then distribute the tables."""
    if not has_citus(connection):
        raise SchemaError(
            "this database has no citus extension: run `CREATE EXTENSION citus` on a Citus "
            "coordinator (and add its workers) first; nothing was changed"
        )
    _upgrade_if_behind(connection, head)
    return distribute(connection)


async def distribute_tables(database: Database) -> bool:
    """Citus: distribute an existing database's tables by session (docs/DEPLOYMENT.md), after
    upgrading it to the newest schema, in one transaction; False if they already were."""
    return await database.write(_distribute_at_head, head_revision())


def created_at_head(connection: Connection, head: str) -> bool:
    """Build a never-migrated database at `head` directly, if the packaged head schema is
    this code's (else False: the chain runs)."""
    schema = head_schema(connection.dialect.name, script_location() / "versions")
    if schema is None or schema.revision != head or not is_empty(connection):
        return False
    create_at_head(connection, schema)
    return True
