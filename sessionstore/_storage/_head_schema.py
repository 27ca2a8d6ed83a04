"""A new database created at the newest schema in one short transaction.

Running the whole migration chain on a new database costs Alembic's machinery, 19 scripts
and SQLite's table rebuilds: on a busy machine long enough for another store's first write
to time out behind it. The schema the chain produces is kept, per backend, as the DDL in
`_head_sql/` (written by `python -m sessionstore._storage._head_schema_dump` from a
database migrated through the whole chain), and replayed on a new database. The migrations
stay the one source of truth: each file names the digest of the migration scripts it was
generated from, and a file whose digest no longer matches them is ignored (the chain runs instead);
`tests/test_head_schema.py` fails until it is regenerated and proves that the replayed schema
equals the migrated one.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.util import await_only

from .._schema import VIEWS, metadata
from ._head_file import HeadSchema


def is_empty(connection: Connection) -> bool:
    """No table or view of ours, nor Alembic's, exists: the database was never migrated."""
    inspector = sa.inspect(connection)
    ours = {*metadata.tables, *VIEWS, "alembic_version"}
    existing = {*inspector.get_table_names(), *inspector.get_view_names()}
    return not ours & existing


def create_at_head(connection: Connection, schema: HeadSchema) -> None:
    """Inside the caller's write transaction: build `schema` and stamp its revision."""
    if connection.dialect.name == "postgresql":
        # One round trip: asyncpg runs a script of many statements in the transaction the
        # connection is in (SQLAlchemy's own execute would prepare, one statement at a time).
        driver = connection.connection.driver_connection
        assert driver is not None
        await_only(driver.execute(";\n".join(schema.statements)))
    else:
        for statement in schema.statements:
            connection.exec_driver_sql(statement)
    connection.execute(
        sa.text("INSERT INTO alembic_version (version_num) VALUES (:revision)"),
        {"revision": schema.revision},
    )
