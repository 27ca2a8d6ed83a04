"""A new database is created at head directly, and that is exactly what the migrations build.

If a migration is added or changed without regenerating `sessionstore/_head_sql/`
(`python -m sessionstore._storage._head_schema_dump`), the first test here fails, and the store
ignores the stale file (the chain runs). The others prove, on both backends, that a database
created from the file and one migrated from the first revision cannot be told apart:
Alembic's autogenerate, every object in the catalog (triggers, views, functions, FTS tables,
indexes, constraints) and every row.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sessionstore import SessionStore
from sessionstore._storage._head_file import head_schema, head_sql_path, migrations_digest, parse
from sessionstore._storage._head_schema_dump import (
    postgresql_head,
    scratch_pg_database,
    sqlite_head,
)
from sessionstore._storage._migrations import created_at_head
from sessionstore._storage._revisions import chain_head_revision, head_revision, script_location
from tests.conftest import BACKENDS
from tests.support.database import migrate_to, read_as_it_is, write_as_it_is
from tests.support.schema_catalog import catalog, contents, schema_diff

_REGENERATE = "regenerate it: python -m sessionstore._storage._head_schema_dump"
_FIRST_REVISION = "0001"


@pytest.fixture(params=BACKENDS)
def two_new_databases(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two empty databases on one backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'head.db'}", f"sqlite:///{tmp_path / 'chain.db'}"
        return
    first: str = request.getfixturevalue("fresh_pg_url")
    with scratch_pg_database(first) as second:
        yield first, second


@pytest.mark.parametrize("dialect", BACKENDS)
def test_the_head_schema_files_are_those_of_these_migrations(dialect: str) -> None:
    schema = parse(head_sql_path(dialect).read_text(encoding="utf-8"))
    assert schema.digest == migrations_digest(script_location() / "versions"), _REGENERATE
    assert schema.revision == chain_head_revision(), _REGENERATE
    assert head_revision() == chain_head_revision()


async def test_the_sqlite_file_is_what_the_chain_writes(tmp_path: Path) -> None:
    packaged = parse(head_sql_path("sqlite").read_text(encoding="utf-8"))
    assert await sqlite_head(tmp_path) == list(packaged.statements), _REGENERATE


def test_the_postgresql_file_is_what_the_chain_runs(fresh_pg_url: str) -> None:
    packaged = parse(head_sql_path("postgresql").read_text(encoding="utf-8"))
    assert postgresql_head(fresh_pg_url) == list(packaged.statements), _REGENERATE


def _everything(
    connection: Connection,
) -> tuple[dict[str, list[tuple[str, ...]]], dict[str, list[str]]]:
    return catalog(connection), contents(connection)


async def test_created_at_head_equals_migrated_from_the_first_revision(
    two_new_databases: tuple[str, str],
) -> None:
    at_head, chained = two_new_databases
    assert await write_as_it_is(at_head, lambda conn: created_at_head(conn, head_revision()))
    await migrate_to(chained, _FIRST_REVISION)
    await migrate_to(chained, head_revision())
    assert await read_as_it_is(at_head, schema_diff) == []
    assert await read_as_it_is(chained, schema_diff) == []
    created = await read_as_it_is(at_head, _everything)
    assert created == await read_as_it_is(chained, _everything)
    definitions = [" ".join(row) for rows in created[0].values() for row in rows]
    assert any("CREATE TRIGGER" in text.upper() for text in definitions)  # raw SQL compared too


def _kinds_by_creation(connection: Connection) -> list[str]:
    rows = connection.exec_driver_sql(
        "SELECT type FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
        " AND name NOT LIKE 'message_search_%' ORDER BY rowid"
    )
    return [str(kind) for (kind,) in rows]


async def test_a_store_creates_a_new_file_at_head_and_it_works(tmp_path: Path) -> None:
    """Created in one go, tables first (the chain interleaves triggers with later tables),
    stamped at head, and a store then writes and reads through it."""
    url = f"sqlite:///{tmp_path / 'new.db'}"
    async with SessionStore(url) as store:
        await store.append("s", [{"role": "user", "content": "hello"}])
        assert [row.item for row in await store.history("s")] == [
            {"role": "user", "content": "hello"}
        ]
        async with store.engine.connect() as conn:
            migrated = await conn.scalar(
                sa.text("SELECT count(*) FROM events WHERE event = 'schema.migrated'")
            )
    kinds = await read_as_it_is(url, _kinds_by_creation)
    order = ("table", "index", "view", "trigger")
    assert kinds == sorted(kinds, key=order.index) and "trigger" in kinds
    assert migrated == 1


def test_a_head_schema_from_other_migrations_is_ignored(tmp_path: Path) -> None:
    versions = tmp_path / "versions"
    shutil.copytree(
        script_location() / "versions", versions, ignore=shutil.ignore_patterns("__pycache__")
    )
    assert head_schema("sqlite", versions) is not None
    edited = tmp_path / "edited"
    shutil.copytree(versions, edited)
    last = sorted(edited.glob("*.py"))[-1]
    last.write_text(last.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    assert head_schema("sqlite", edited) is None
    added = tmp_path / "added"
    shutil.copytree(versions, added)
    (added / "9999_next.py").write_text('revision = "9999"\n', encoding="utf-8")
    assert head_schema("postgresql", added) is None
