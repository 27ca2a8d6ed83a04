"""`sessionstore query`: read-only SQL, writes refused twice over."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sessionstore import QueryRejectedError, SessionStore, StoreError
from sessionstore.cli._query_guard import vetted
from tests.support.cli import SECRET, assert_refused, db_state, run

TOOLS_OF_WORK = (
    "SELECT tool_name, count(*) AS n FROM messages WHERE session_id = 'work' "
    "AND item_type = 'function_call' AND kind = 'item' GROUP BY tool_name"
)


def test_answers_a_select(seeded: str) -> None:
    result = run("query", TOOLS_OF_WORK, "--url", seeded, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"tool_name": "read_file", "n": 8}]


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
    assert json.loads(count.stdout)[0]["n"] > 0
    assert db_state(seeded) == before


def test_the_database_itself_refuses_a_write_the_guard_never_sees(seeded: str) -> None:
    """Below the parser: the store `query` opens is read-only, so even a write that got
    past the guard would be refused by the database."""
    write = (
        "INSERT INTO retention_policies (name, action, older_than_days) "
        "VALUES ('p', 'delete_events', 1)"
    )

    async def attempt() -> None:
        async with SessionStore(seeded, read_only=True) as store:
            await store.read_snapshot(lambda conn: conn.exec_driver_sql(write))

    with pytest.raises(StoreError, match=r"(?i)read-only|readonly|attempt to write"):
        asyncio.run(attempt())
    assert db_state(seeded)["retention_policies"] == 0


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("SELECT nocolumn FROM sessions", "the database rejected it"),
        ("SELECT * FROM nosuchtable", "is not a sessionstore table"),
    ],
)
def test_a_query_that_cannot_run_is_one_clear_line(seeded: str, sql: str, words: str) -> None:
    result = run("query", sql, "--url", seeded)
    assert_refused(result, 2, words, "sessionstore schema")


def test_the_table_output_counts_rows(seeded: str) -> None:
    sql = "SELECT session_id FROM sessions ORDER BY session_id"
    result = run("query", sql, "--url", seeded, env={"SESSIONSTORE_TERMINAL": "1"})
    assert result.exit_code == 0 and "2 row(s)" in result.output  # the title, on a terminal
    piped = run("query", sql, "--url", seeded)  # into a pipe: the header, then a line a row
    assert piped.exit_code == 0 and piped.stdout == "session_id\nother\nwork\n"


def test_the_config_file_names_the_database(config_file: Path) -> None:
    result = run("query", TOOLS_OF_WORK, "--config", str(config_file), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"tool_name": "read_file", "n": 8}]


HOSTILE = "[/] [bold red]x[/] \x1b[31mred\x1b[0m [link=file:///etc]y[/link]"


def cells(url: str) -> str:
    """NULL, '', a two-byte BLOB and hostile text, in the backend's own BLOB syntax."""
    blob = "decode('00ff', 'hex')" if url.startswith("postgresql") else "x'00ff'"
    return f"SELECT NULL AS n, '' AS e, {blob} AS b, '{HOSTILE}' AS h"


@pytest.mark.parametrize("fmt", ["--json", "--nl"])
def test_json_formats_keep_null_apart_from_empty_and_base64_blobs(seeded: str, fmt: str) -> None:
    result = run("query", cells(seeded), "--url", seeded, fmt)
    assert result.exit_code == 0, result.output
    text = result.stdout
    row = json.loads(text)[0] if fmt == "--json" else json.loads(text.splitlines()[0])
    assert row == {"n": None, "e": "", "b": "AP8=", "h": HOSTILE}


@pytest.mark.parametrize(("fmt", "delimiter"), [("--csv", ","), ("--tsv", "\t")])
def test_csv_and_tsv_round_trip_through_the_csv_module(
    seeded: str, fmt: str, delimiter: str
) -> None:
    result = run("query", cells(seeded), "--url", seeded, fmt)
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout), delimiter=delimiter))
    assert rows == [["n", "e", "b", "h"], ["", "", "AP8=", HOSTILE]]
    bare = run("query", cells(seeded), "--url", seeded, fmt, "--no-headers")
    assert list(csv.reader(io.StringIO(bare.stdout), delimiter=delimiter)) == rows[1:]


def test_the_table_prints_hostile_text_verbatim_and_null_as_null(seeded: str) -> None:
    result = run("query", cells(seeded), "--url", seeded)
    assert result.exit_code == 0, result.output
    assert "NULL" in result.stdout and "[/]" in result.stdout and "[bold red]" in result.stdout


def test_two_formats_at_once_are_refused(seeded: str) -> None:
    assert_refused(
        run("query", "SELECT 1", "--url", seeded, "--csv", "--json"), 2, "--json and --csv"
    )


def test_secrets_are_redacted_unless_asked_and_the_opt_out_is_recorded(seeded: str) -> None:
    sql = "SELECT payload FROM messages WHERE CAST(payload AS TEXT) LIKE '%sk-proj%'"
    redacted = run("query", sql, "--url", seeded, "--nl")
    assert redacted.exit_code == 0 and redacted.stdout.strip()
    assert "sk-proj-Zz9" not in redacted.stdout
    before = db_state(seeded)["events"]
    raw = run("query", sql, "--url", seeded, "--nl", "--no-redact")
    assert SECRET.split("=")[1] in raw.stdout
    assert db_state(seeded)["events"] == before + 1


# About 130 KB of table: twice what a pipe buffers, so the writer meets the closed pipe.
MANY_ROWS = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) "
    "SELECT i, 'row [/] text' AS t FROM n"
)


@pytest.mark.parametrize("fmt", [[], ["--csv"]])
@pytest.mark.slow  # drives a process: left out of the everyday subset
def test_piped_output_is_unwrapped_and_a_closed_pipe_exits_quietly(
    seeded: str, fmt: list[str]
) -> None:
    """`sessionstore query ... | head -1` in a real pipe: exit 0, nothing on stderr."""
    command = [sys.executable, "-m", "sessionstore.cli", "query", MANY_ROWS, "--url", seeded]
    proc = subprocess.Popen(
        [*command, "--limit", "5000", *fmt], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait() == 0
    assert proc.stderr.read() == b""
    assert first.strip() != b""
    long_cell = f"SELECT 'a{'0' * 400}' AS long_cell"
    wide = subprocess.run([*command[:4], long_cell, *command[5:]], capture_output=True, check=True)
    assert b"a" + b"0" * 400 in wide.stdout  # not wrapped or truncated at a terminal width


def test_the_row_cap_stops_early_and_says_so(seeded: str) -> None:
    result = run("query", MANY_ROWS, "--url", seeded, "--nl", "--limit", "3")
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["i"] for line in result.stdout.splitlines()] == [1, 2, 3]
    assert "note: the first 3 rows shown; there are more (--limit N for more)" in result.stderr
    whole = run("query", "SELECT session_id FROM sessions", "--url", seeded, "--limit", "2")
    assert whole.exit_code == 0 and "--limit" not in whole.stderr


def test_a_runaway_query_is_stopped_by_the_database(seeded: str) -> None:
    endless = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    )
    started = time.monotonic()
    result = run("query", endless, "--timeout", "0.5", "--url", seeded)
    assert_refused(result, 1, "timed out:", "longer than 0.5 s", "--timeout")
    assert time.monotonic() - started < 20
    again = run("query", "SELECT count(*) AS n FROM sessions", "--json", "--url", seeded)
    assert again.exit_code == 0 and json.loads(again.stdout)[0]["n"] >= 1  # nothing left over


@pytest.mark.parametrize(
    ("pragma", "runs"),
    [
        ("PRAGMA table_info(messages)", 'PRAGMA table_info("messages")'),
        ("pragma index_list('messages')", 'PRAGMA index_list("messages")'),
        ("PRAGMA user_version", "PRAGMA user_version"),
        ("PRAGMA journal_mode = DELETE", None),
        ("PRAGMA writable_schema", None),
        ("PRAGMA table_info(messages); DROP TABLE messages", None),
        ("PRAGMA page_size(1024)", None),  # sets the page size: a write, not a read
        ("PRAGMA table_info(sqlite_master)", None),  # a catalog's shape is not ours to show
    ],
)
def test_only_read_only_pragmas_pass(pragma: str, runs: str | None) -> None:
    """What runs is re-written from what was checked (the argument quoted as a name)."""
    if runs is not None:
        assert vetted(pragma, "sqlite") == runs
    else:
        with pytest.raises(QueryRejectedError, match="refused"):
            vetted(pragma, "sqlite")


def test_a_read_only_pragma_runs_on_sqlite(sqlite_seeded: str) -> None:
    result = run("query", "PRAGMA table_info(sessions)", "--json", "--url", sqlite_seeded)
    assert result.exit_code == 0, result.output
    assert "session_id" in {row["name"] for row in json.loads(result.stdout)}
