"""`--json`, `--nl`, `--csv`, `--tsv` on every listing command, one implementation; the note
when a limit cut the list; `query` columns named as the user wrote them; `--url PATH`."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import Result

from sessionstore import CallUsage, SessionStore
from sessionstore._events import Event
from sessionstore._jobs._retention import RetentionAction, RetentionPolicy, set_policy
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.cli import SECRET, assert_refused, run, run_process
from tests.support.histories import coding_session

# A value that every format must carry intact: a comma, a tab, quotes and a newline.
AWKWARD = "we,ird\t\"id\" 'q'\nline two"
TEXT = f'needle text, with\ttabs "quotes" and\na newline [bold]x[/bold] {SECRET}'


@pytest.fixture
def listed(db_url: str) -> str:
    """Session AWKWARD (compacted: archives, events; a model call) and session 'plain'."""

    async def seed() -> None:
        async with SessionStore(db_url, create_tables=True) as store:
            manager = CompactionManager(
                CompactionConfig(store=store, policy=CompactionPolicy(keep_recent_turns=2))
            )
            await manager.append(AWKWARD, [{"role": "user", "content": TEXT}, *coding_session(6)])
            await manager.compact(AWKWARD)
            sent = await store.load_context(AWKWARD)
            call = await store.record_model_call(AWKWARD, sent, model="gpt-4o")
            await store.record_usage(AWKWARD, [CallUsage(10, 0, 1, 0)], calls=[(call, "gpt-4o")])
            await store.append("plain", [{"role": "user", "content": "needle again"}])
            await set_policy(store, RetentionPolicy("old", RetentionAction.DELETE_EVENTS, 30))

    asyncio.run(seed())
    return db_url


# command -> (arguments, a column holding AWKWARD or None)
LISTINGS: dict[str, tuple[list[str], str | None]] = {
    "sessions list": (["sessions", "list"], "session_id"),
    "sessions show": (["sessions", "show", AWKWARD], None),
    "events": (["events", "--session", AWKWARD], "session_id"),
    "archive list": (["archive", "list"], "session_id"),
    "usage": (["usage"], "session"),
    "search": (["search", "needle"], "session_id"),
    "retention policy list": (["retention", "policy", "list"], None),
    "retention run": (["retention", "run", "--dry-run"], None),
    "query": (["query", "SELECT session_id, payload FROM messages ORDER BY seq"], "session_id"),
}


def _ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert SECRET not in result.stdout
    return result.stdout


@pytest.mark.parametrize("name", sorted(LISTINGS))
def test_each_format_of_each_listing_parses_and_agrees(listed: str, name: str) -> None:
    arguments, awkward_column = LISTINGS[name]
    if name == "retention run":  # --json keeps its documented single object
        objects = json.loads(_ok(run(*arguments, "--json", "--url", listed)))["counts"]
        nl = _ok(run(*arguments, "--nl", "--url", listed)).splitlines()
        records = [json.loads(line) for line in nl]
        assert {record["policy"]: record["rows"] for record in records} == objects
        units = {"rows", "sessions", "archives", "events"}  # what each policy's count counts
        assert all(record["of"] in units and record["dry_run"] for record in records)
    else:
        records = json.loads(_ok(run(*arguments, "--json", "--url", listed)))
    assert isinstance(records, list) and records, name
    lines = _ok(run(*arguments, "--nl", "--url", listed)).splitlines()
    assert [json.loads(line) for line in lines] == records  # one object per line
    for flag, delimiter in (("--csv", ","), ("--tsv", "\t")):
        text = _ok(run(*arguments, flag, "--url", listed))
        header, *rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
        if name == "events":  # JSON: each event's own fields; CSV: fixed columns, details
            assert header[:5] == ["id", "ts", "severity", "event", "session_id"]
            assert header[-3:] == ["reason", "message", "details"]
        else:
            assert header == list(records[0]), (flag, header)
        assert len(rows) == len(records), (flag, text)
        if awkward_column is not None:
            column = header.index(awkward_column)
            assert AWKWARD in [row[column] for row in rows], (flag, rows)
    if awkward_column is not None:
        assert AWKWARD in [record[awkward_column] for record in records]


def test_sessions_show_csv_carries_each_item_as_json(listed: str) -> None:
    shown = json.loads(_ok(run("sessions", "show", AWKWARD, "--json", "--url", listed)))
    text = _ok(run("sessions", "show", AWKWARD, "--csv", "--url", listed))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [json.loads(row["item"]) if row["item"] else None for row in rows] == [
        record["item"] for record in shown
    ]


def test_two_formats_at_once_are_a_usage_error(listed: str) -> None:
    result = run("sessions", "list", "--json", "--csv", "--url", listed)
    assert_refused(result, 2, "pick one output format, not --json and --csv")


def test_a_cut_list_says_so_on_stderr(listed: str) -> None:
    result = run("sessions", "list", "--limit", "1", "--url", listed)
    assert result.exit_code == 0, result.output
    assert "note: 1 of 2 sessions shown (--limit N for more)" in result.stderr
    assert "note" not in result.stdout
    whole = run("sessions", "list", "--url", listed)
    assert "note" not in whole.stderr
    hits = run("search", "needle", "--limit", "1", "--json", "--url", listed)
    assert len(json.loads(hits.stdout)) == 1
    assert "note: the first 1 hits shown; there are more (--limit N for more)" in hits.stderr
    archives = run("archive", "list", "--limit", "1", "--url", listed)
    assert "of" in archives.stderr or "note" not in archives.stderr


def test_events_follow_streams_newline_delimited_json_only(listed: str) -> None:
    result = run("events", "--follow", "--follow-seconds", "0", "--json", "--url", listed)
    assert_refused(result, 2, "--follow never ends a JSON array: use --nl")
    streamed = run("events", "--follow", "--follow-seconds", "0", "--nl", "--url", listed)
    assert streamed.exit_code == 0, streamed.output
    assert all(json.loads(line)["id"] for line in streamed.stdout.splitlines())


def test_a_warning_shows_its_message_and_details_redacted(listed: str) -> None:
    async def warn() -> None:
        async with SessionStore(listed) as store:
            fields = {
                "checked": 4,
                "left_out": 1,
                "left_out_kinds": ["decision"],
                "reinserted_facts": [f"deploy with {SECRET}"],
                "message": "1 standing fact did not fit",
            }
            event = Event("compact.facts_carried", "plain", severity="warning", fields=fields)
            await store.record_events([event])

    asyncio.run(warn())
    result = run("events", "--type", "compact.facts_carried", "--url", listed)
    line = _ok(result).strip().splitlines()[-1]
    assert "message=1 standing fact did not fit" in line
    assert '"left_out_kinds":["decision"]' in line and '"checked":4' in line
    assert "deploy with" in line and SECRET not in line
    csv_text = _ok(run("events", "--type", "compact.facts_carried", "--csv", "--url", listed))
    [row] = list(csv.DictReader(io.StringIO(csv_text)))
    assert row["message"] == "1 standing fact did not fit"
    assert json.loads(row["details"])["left_out_kinds"] == ["decision"]


def test_query_columns_keep_the_names_the_user_wrote(listed: str) -> None:
    sql = 'SELECT count(*), 1 AS "MixedCase", max( seq ), seq+1, session_id FROM messages GROUP BY session_id, seq LIMIT 1'  # noqa: E501
    record = json.loads(_ok(run("query", sql, "--json", "--url", listed)))[0]
    header = next(csv.reader(io.StringIO(_ok(run("query", sql, "--csv", "--url", listed)))))
    assert header == list(record)
    if listed.startswith("sqlite"):  # SQLite names an expression by its text, as written
        assert header == ["count(*)", "MixedCase", "max( seq )", "seq+1", "session_id"]
    else:  # PostgreSQL names it by its function, as for the statement as typed
        assert header == ["count", "MixedCase", "max", "?column?", "session_id"]


def test_a_terminal_still_gets_the_table(listed: str) -> None:
    """$SESSIONSTORE_TERMINAL=1: drawn as before (title, boxes); into a pipe: lines."""
    drawn = run("sessions", "list", "--url", listed, env={"SESSIONSTORE_TERMINAL": "1"})
    assert "Sessions (2)" in drawn.stdout and "┏" in drawn.stdout
    plain = run("sessions", "list", "--url", listed)
    assert "┏" not in plain.stdout and "Sessions (2)" not in plain.stdout
    assert plain.stdout.splitlines()[0].startswith("session_id\titems\ttokens")


def test_url_takes_a_plain_file_path(tmp_path: Path) -> None:
    target = tmp_path / "plain path.db"
    asyncio.run(_one_session(f"sqlite:///{target}"))
    absolute = run("sessions", "list", "--url", str(target))
    assert absolute.exit_code == 0 and "s1" in absolute.stdout, absolute.output
    relative = run_process("sessions", "list", "--url", "./plain path.db", cwd=tmp_path)
    assert relative.returncode == 0 and "s1" in relative.stdout, relative.stderr
    typo = run("sessions", "list", "--url", "postgress://u@localhost/db")
    assert_refused(typo, 2, "unsupported database URL scheme 'postgress'")
    assert len(typo.output.strip().splitlines()) == 1


async def _one_session(url: str) -> None:
    async with SessionStore(url, create_tables=True) as store:
        await store.append("s1", [{"role": "user", "content": "hi"}])
