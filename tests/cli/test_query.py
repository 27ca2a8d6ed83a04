"""`sessionstore query`: read-only SQL, writes refused twice over."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from sessionstore.cli import app
from sessionstore.cli.query import _run, refusal

runner = CliRunner()


def test_answers_a_select(seeded: str) -> None:
    result = runner.invoke(
        app,
        [
            "query",
            "SELECT tool_name, count(*) AS n FROM messages WHERE session_id = 'work' "
            "AND item_type = 'function_call' AND kind = 'item' GROUP BY tool_name",
            "--url",
            seeded,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"tool_name": "read_file", "n": 8}]


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE sessions SET last_seq = 0",
        "DELETE FROM messages",
        "DROP TABLE messages",
        "select 1; drop table messages",
        "WITH gone AS (DELETE FROM events RETURNING id) SELECT count(*) FROM gone",
        "INSERT INTO events (event, payload) VALUES ('x', '{}')",
    ],
)
def test_refuses_writes_and_changes_nothing(seeded: str, sql: str) -> None:
    result = runner.invoke(app, ["query", sql, "--url", seeded])
    assert result.exit_code == 2 and "refused" in result.output
    count = runner.invoke(
        app, ["query", "SELECT count(*) AS n FROM messages", "--url", seeded, "--json"]
    )
    assert json.loads(count.output)[0]["n"] > 0


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
