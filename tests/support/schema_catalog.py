"""What a database's schema is, read from its own catalog, to compare two databases.

Alembic's autogenerate compares tables, columns, indexes and constraints with `_schema.py`;
the raw SQL the migrations run (triggers, views, functions, FTS5 tables) only the catalog
shows, so both are read.
"""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from sessionstore._schema import is_search_index, metadata

_PG_CATALOG = {
    "columns": "SELECT table_name, column_name, ordinal_position, data_type,"
    " character_maximum_length, is_nullable, column_default FROM information_schema.columns"
    " WHERE table_schema = current_schema()",
    "relations": "SELECT relname, relkind, reloptions, relpersistence FROM pg_class"
    " WHERE relnamespace = current_schema()::regnamespace",
    "constraints": "SELECT conrelid::regclass::text, conname, contype, pg_get_constraintdef(oid)"
    " FROM pg_constraint WHERE connamespace = current_schema()::regnamespace",
    "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes"
    " WHERE schemaname = current_schema()",
    "triggers": "SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) FROM pg_trigger"
    " WHERE NOT tgisinternal",
    "views": "SELECT viewname, definition FROM pg_views WHERE schemaname = current_schema()",
    "functions": "SELECT proname, pg_get_functiondef(oid) FROM pg_proc"
    " WHERE pronamespace = current_schema()::regnamespace",
    "sequences": "SELECT sequencename, data_type, start_value, increment_by, cycle"
    " FROM pg_sequences WHERE schemaname = current_schema()",
}
_SQLITE_CATALOG = {
    "objects": "SELECT type, name, tbl_name, sql FROM sqlite_master",
    "user_version": "PRAGMA user_version",
    "application_id": "PRAGMA application_id",
}


def schema_diff(connection: Connection) -> list[object]:
    """Alembic autogenerate's differences between the database and `_schema.py`."""

    def ours(name: str | None, *_: object) -> bool:
        return not is_search_index(name)

    context = MigrationContext.configure(connection, opts={"include_name": ours})
    return list(compare_metadata(context, metadata))


def catalog(connection: Connection) -> dict[str, list[tuple[str, ...]]]:
    """Every schema object's definition as the database prints it, by kind, sorted."""
    queries = _PG_CATALOG if connection.dialect.name == "postgresql" else _SQLITE_CATALOG
    return {
        kind: sorted(tuple(map(str, row)) for row in connection.exec_driver_sql(sql))
        for kind, sql in queries.items()
    }


def contents(connection: Connection) -> dict[str, list[str]]:
    """Every table's rows (a new database holds only its revision stamp)."""
    return {
        name: sorted(
            repr(tuple(row)) for row in connection.exec_driver_sql(f'SELECT * FROM "{name}"')
        )
        for name in inspect(connection).get_table_names()
    }
