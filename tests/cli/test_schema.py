"""`sessionstore schema`: the documented tables with their columns and row counts."""

from __future__ import annotations

import json

from sessionstore._schema import metadata
from tests.support.cli import assert_refused, db_state, run


def test_every_table_is_listed_with_its_row_count(seeded: str) -> None:
    before = db_state(seeded)
    result = run("schema", "--json", "--url", seeded)
    assert result.exit_code == 0, result.output
    listed = {entry["table"]: entry for entry in json.loads(result.stdout)}
    assert set(listed) == set(metadata.tables)
    assert {name: entry["rows"] for name, entry in listed.items()} == before
    assert "session_id" in {c["name"] for c in listed["messages"]["columns"]}


def test_one_tables_columns_and_an_unknown_table(seeded: str) -> None:
    result = run("schema", "archives", "--url", seeded)
    assert result.exit_code == 0 and "content_sha256" in result.stdout
    assert_refused(run("schema", "nope", "--url", seeded), 2, "no table 'nope'", "messages")
