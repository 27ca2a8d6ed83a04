"""`sessionstore query`: read-only SQL, writes refused twice over."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sessionstore.cli.query import _run, refusal
from tests.cli.conftest import assert_refused, db_state, run

TOOLS_OF_WORK = (
    "SELECT tool_name, count(*) AS n FROM messages WHERE session_id = 'work' "
    "AND item_type = 'function_call' AND kind = 'item' GROUP BY tool_name"
)


def test_answers_a_select(seeded: str) -> None:
    result = run("query", TOOLS_OF_WORK, "--url", seeded, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"tool_name": "read_file", "n": 8}]


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("UPDATE sessions SET last_seq = 0", "only SELECT"),
        ("DELETE FROM messages", "only SELECT"),
        ("DROP TABLE messages", "only SELECT"),
        ("select 1; drop table messages", "only one statement is allowed"),
        ("SELECT 1; SELECT 2", "only one statement is allowed"),
        (
            "WITH gone AS (DELETE FROM events RETURNING id) SELECT count(*) FROM gone",
            "DELETE is not allowed in a read-only query",
        ),
        ("INSERT INTO events (event, payload) VALUES ('x', '{}')", "only SELECT"),
    ],
)
def test_refuses_writes_and_changes_nothing(seeded: str, sql: str, reason: str) -> None:
    before = db_state(seeded)
    result = run("query", sql, "--url", seeded)
    assert result.exit_code == 2 and "refused" in result.output
    assert_refused(result, 2, f"refused: {reason}")
    count = run("query", "SELECT count(*) AS n FROM messages", "--url", seeded, "--json")
    assert json.loads(count.output)[0]["n"] > 0
    assert db_state(seeded) == before


def test_the_database_itself_refuses_a_disguised_write(seeded: str) -> None:
    assert refusal("SELECT 1") is None
    assert refusal("SELECT * FROM x WHERE note = 'please DELETE me'") is None  # words in literals
    with pytest.raises(Exception, match=r"(?i)read-only|readonly|attempt to write"):
        asyncio.run(
            _run(
                seeded,
                None,
                "WITH x AS (SELECT 1) INSERT INTO retention_policies "
                "(name, action, older_than_days) SELECT 'p', 'delete_events', 1",
            )
        )


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("SELECT * FROM nosuchtable", "nosuchtable"),
        ("SELECT nocolumn FROM sessions", "nocolumn"),
    ],
)
def test_a_query_the_database_rejects_is_one_clear_line(seeded: str, sql: str, words: str) -> None:
    result = run("query", sql, "--url", seeded)
    assert_refused(result, 2, "the database rejected it", words, "docs/SCHEMA.md")


def test_the_table_output_counts_rows(seeded: str) -> None:
    result = run("query", "SELECT session_id FROM sessions ORDER BY session_id", "--url", seeded)
    assert result.exit_code == 0 and "2 row(s)" in result.output


def test_the_config_file_names_the_database(config_file: Path) -> None:
    result = run("query", TOOLS_OF_WORK, "--config", str(config_file), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"tool_name": "read_file", "n": 8}]
