"""Append-only enforced by the database: `messages` refuses UPDATE and DELETE.

Migration 0007 installs triggers on both backends that refuse any UPDATE or DELETE of a
message row (and TRUNCATE on PostgreSQL) unless the transaction is in maintenance: the
retention job, deleting a session, migrations, and PostgreSQL's
`sessionstore_apply_retention()` (which carries the setting itself). So a bug in the
application, a stray admin statement or a role without DDL rights cannot rewrite history.

PostgreSQL reads the transaction-local setting `sessionstore.maintenance`; SQLite calls
`sessionstore_maintenance()`, a function this module registers on every connection the
store opens. A connection that lacks it (any other SQLite client) cannot change a row.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from typing import Any, Final

from sqlalchemy.engine import Connection

SQLITE_FUNCTION: Final = "sessionstore_maintenance"
PG_SETTING: Final = "sessionstore.maintenance"
_FLAG: Final = "sessionstore_maintenance"


def register(dbapi_connection: sqlite3.Connection, info: dict[str, Any]) -> None:
    """Give a new SQLite connection the function the triggers ask (`info` holds its flag)."""
    dbapi_connection.create_function(
        SQLITE_FUNCTION, 0, lambda: int(bool(info.get(_FLAG))), deterministic=False
    )


@contextlib.contextmanager
def maintenance(conn: Connection) -> Iterator[None]:
    """Within this block of a write transaction, message rows may be updated and deleted."""
    if conn.dialect.name == "sqlite":
        info = conn.connection.info
        info[_FLAG] = True
        try:
            yield
        finally:
            info[_FLAG] = False
    else:
        # SET LOCAL, not set_config(): Citus forwards it to the workers, where the trigger of
        # each shard reads it (on plain PostgreSQL the citus setting is an unused placeholder).
        conn.exec_driver_sql("SET LOCAL citus.propagate_set_commands = 'local'")
        conn.exec_driver_sql(f"SET LOCAL {PG_SETTING} = 'on'")
        try:
            yield
        finally:
            conn.exec_driver_sql(f"SET LOCAL {PG_SETTING} = 'off'")
