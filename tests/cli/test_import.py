"""`sessionstore import`: SDK databases in; a summary table or JSON out; dependable exit codes."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from agents import SQLiteSession
from agents.extensions.memory import SQLAlchemySession
from typer.testing import CliRunner, Result

from sessionstore import SessionStore, SQLSession
from sessionstore.cli import app
from tests.support.sdk_runs import PROMPTS, converse

runner = CliRunner()


def run_import(*args: str) -> Result:
    """`sessionstore import ARGS`, as a user types it."""
    return runner.invoke(app, ["import", *args])


def report_of(result: Result) -> dict[str, Any]:
    """The --json report (stdout only: the progress bar and errors go to stderr)."""
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def text_of(result: Result) -> str:
    """Everything printed, with the terminal's line wrapping undone."""
    return " ".join(result.output.split())


def says(result: Result, message: str) -> bool:
    """Whether the output holds `message`, however the terminal folded it (long paths too)."""
    return "".join(message.split()) in "".join(result.output.split())


async def sdk_items(path: Path, session_id: str) -> list[Any]:
    """What the SDK itself returns for a session of a SQLiteSession file."""
    sdk = SQLiteSession(session_id, path)
    try:
        return await sdk.get_items()
    finally:
        sdk.close()


async def stored(url: str, session_id: str) -> tuple[list[Any], int]:
    """A session's items as SQLSession returns them, and the store's own token total."""
    async with SessionStore(url) as store:
        items = await SQLSession(session_id, store).get_items()
        return list(items), await store.context_tokens(session_id)


@pytest.fixture
def sdk_file(tmp_path: Path) -> Path:
    """A SQLiteSession file with sessions 'alice' (8 items, a tool round trip) and 'bob' (2)."""
    path = tmp_path / "conversations.db"

    async def write() -> None:
        for session_id, prompts in (("alice", PROMPTS), ("bob", PROMPTS[:1])):
            sdk = SQLiteSession(session_id, path)
            await converse(sdk, prompts)
            sdk.close()

    asyncio.run(write())
    return path


def test_imports_with_a_summary_then_nothing_twice(sdk_file: Path, db_url: str) -> None:
    terminal = {"SESSIONSTORE_TERMINAL": "1", "COLUMNS": "400"}  # drawn, its title the source
    first = runner.invoke(app, ["import", str(sdk_file), "--url", db_url], env=terminal)

    assert first.exit_code == 0, first.output
    text = " ".join(re.sub(r"\x1b\[[\d;]*m", "", first.output).split())  # colours off
    assert f"Import from sqlite:///{sdk_file}".replace(" ", "") in text.replace(" ", "")
    assert re.search(r"alice │ imported │ 8 │ 0 │ 0 │", text)
    summary = re.search(r"Imported 10 item\(s\) \(([\d,]+) tokens\) from 2 session\(s\)", text)
    assert summary is not None
    alice, alice_tokens = asyncio.run(stored(db_url, "alice"))
    bob, bob_tokens = asyncio.run(stored(db_url, "bob"))
    assert alice == asyncio.run(sdk_items(sdk_file, "alice"))
    assert bob == asyncio.run(sdk_items(sdk_file, "bob"))
    assert int(summary.group(1).replace(",", "")) == alice_tokens + bob_tokens

    again = run_import(str(sdk_file), "--url", db_url, "--json")

    assert again.exit_code == 0, again.output
    report = report_of(again)
    assert report["ok"] and report["totals"] == {
        "imported": 0,
        "skipped": 0,
        "already_present": 10,
        "tokens": 0,
    }
    assert {entry["status"] for entry in report["sessions"]} == {"up_to_date"}


def test_imports_sqlalchemy_sessions_from_postgresql(fresh_pg_url: str, db_url: str) -> None:
    async def converse_on_postgres(prompts: list[str]) -> list[Any]:
        sdk = SQLAlchemySession.from_url("carol", url=fresh_pg_url, create_tables=True)
        try:
            await converse(sdk, prompts)
            return await sdk.get_items()
        finally:
            await sdk.engine.dispose()

    asyncio.run(converse_on_postgres(list(PROMPTS[:2])))
    first = run_import(fresh_pg_url, "--url", db_url, "--json")
    expected = asyncio.run(converse_on_postgres(list(PROMPTS[2:])))
    second = run_import(fresh_pg_url, "--url", db_url, "--json")

    assert first.exit_code == 0 and second.exit_code == 0, second.output
    (one,), (two,) = report_of(first)["sessions"], report_of(second)["sessions"]
    assert (one["imported"], two["imported"], two["already_present"]) == (6, 2, 6)
    items, tokens = asyncio.run(stored(db_url, "carol"))
    assert items == expected and tokens == one["tokens"] + two["tokens"]
    assert report_of(first)["source"].startswith("postgresql://127.0.0.1:5432/")


def test_dry_run_and_session_selection(sdk_file: Path, sqlite_url: str) -> None:
    dry = run_import(str(sdk_file), "--url", sqlite_url, "--session", "bob", "--dry-run", "--json")

    assert dry.exit_code == 0, dry.output
    report = report_of(dry)
    assert report["dry_run"] and [(s["session_id"], s["status"]) for s in report["sessions"]] == [
        ("bob", "would_import")
    ]
    assert asyncio.run(stored(sqlite_url, "bob")) == ([], 0)
    real = run_import(str(sdk_file), "--url", sqlite_url, "--session", "bob")
    assert real.exit_code == 0 and says(real, "Imported 2 item(s)")
    assert asyncio.run(stored(sqlite_url, "alice")) == ([], 0)
    missing = run_import(str(sdk_file), "--url", sqlite_url, "--session", "dave")
    assert missing.exit_code == 1 and says(missing, "no session 'dave' in sqlite:///")


def test_skipped_rows_are_reported_with_exit_1(sdk_file: Path, sqlite_url: str) -> None:
    with sqlite3.connect(sdk_file) as raw:
        for data in ("{x", "[]", "7"):
            raw.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES ('bob', ?)", (data,)
            )
    raw.close()

    result = run_import(str(sdk_file), "--url", sqlite_url)

    assert result.exit_code == 1
    assert says(result, "bob: message 11: message_data is not valid JSON")
    assert says(result, "bob: message 12: message_data is a JSON list, not an object")
    assert says(result, "bob: ... and 1 more (see --json)")
    # The SDK hands back the JSON list and the number as "items"; nothing of them is stored.
    sdk_view = asyncio.run(sdk_items(sdk_file, "bob"))
    assert sdk_view[2:] == [[], 7]
    assert asyncio.run(stored(sqlite_url, "bob"))[0] == sdk_view[:2]
    # A re-run imports nothing twice, and keeps saying the skipped rows are not there.
    again = run_import(str(sdk_file), "--url", sqlite_url)
    assert again.exit_code == 1, again.output
    assert says(
        again, "bob: 3 message(s) an earlier run skipped (11, 12, 13) are not in the target"
    )
    assert says(again, "delete the target session and import again")
    assert says(again, "0 skipped (3 by an earlier run)")
    assert asyncio.run(stored(sqlite_url, "bob"))[0] == sdk_view[:2]


def test_a_session_with_other_items_is_refused_unless_asked(
    sdk_file: Path, sqlite_url: str
) -> None:
    async def app_writes() -> None:
        async with SessionStore(sqlite_url) as store:
            await store.append("bob", [{"role": "user", "content": "from the new app"}])

    asyncio.run(app_writes())

    refused = run_import(str(sdk_file), "--url", sqlite_url)
    forced = run_import(str(sdk_file), "--url", sqlite_url, "--append-to-existing", "--json")

    assert refused.exit_code == 1
    assert says(refused, "bob: the target session already has 1 row(s) that did not come from")
    assert forced.exit_code == 0, forced.output
    entries = {entry["session_id"]: entry for entry in report_of(forced)["sessions"]}
    assert (entries["alice"]["status"], entries["bob"]["imported"]) == ("up_to_date", 2)
    assert len(asyncio.run(stored(sqlite_url, "bob"))[0]) == 3


def test_config_file_target_and_recovered_rows(sdk_file: Path, tmp_path: Path) -> None:
    target = f"sqlite:///{tmp_path / 'configured.db'}"
    config = tmp_path / "compact.yaml"
    config.write_text(f"model: gpt-4o-mini\nstore:\n  url: {target}\n")

    async def interrupted_run() -> None:
        async with SessionStore(target) as store:
            await store.append("bob", (await sdk_items(sdk_file, "bob"))[:1])

    asyncio.run(interrupted_run())
    result = run_import(str(sdk_file), "--config", str(config), "--model", "gpt-4o")

    assert result.exit_code == 0, result.output
    assert says(result, f"into {target};") and says(result, "bob: 1 item(s) an interrupted run")
    assert asyncio.run(stored(target, "bob"))[0] == asyncio.run(sdk_items(sdk_file, "bob"))


@pytest.fixture
def custom_sdk_file(tmp_path: Path) -> Path:
    """A SQLiteSession file whose tables are named my_sessions and my_messages."""
    path = tmp_path / "custom.db"

    async def write() -> None:
        sdk = SQLiteSession("erin", path, "my_sessions", "my_messages")
        await converse(sdk, PROMPTS[:1])
        sdk.close()

    asyncio.run(write())
    return path


def test_custom_table_names(custom_sdk_file: Path, sqlite_url: str) -> None:
    path = custom_sdk_file
    default = run_import(str(path), "--url", sqlite_url)
    named = ["--sessions-table", "my_sessions", "--messages-table", "my_messages", "--json"]
    custom = run_import(str(path), "--url", sqlite_url, *named)

    assert default.exit_code == 2  # the flags that name the tables it holds
    assert says(default, "pass --sessions-table my_sessions --messages-table my_messages")
    assert custom.exit_code == 0 and report_of(custom)["totals"]["imported"] == 2


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{tmp}/missing.db", "source database {tmp}/missing.db does not exist"),
        ("{tmp}/plain.db", "has no Agents SDK session tables named 'agent_sessions' and"),
        ("mysql://user@host/agents", "bad source URL: unsupported database URL scheme 'mysql'"),
        ("postgresql://postgres@127.0.0.1:1/agents", "cannot connect to the source"),
    ],
)
def test_bad_sources_exit_2_with_what_was_expected(
    tmp_path: Path, sqlite_url: str, source: str, message: str
) -> None:
    with sqlite3.connect(tmp_path / "plain.db") as raw:
        raw.execute("CREATE TABLE notes (body TEXT)")
    raw.close()

    result = run_import(source.format(tmp=tmp_path), "--url", sqlite_url)

    assert result.exit_code == 2
    assert says(result, message.format(tmp=tmp_path))


def test_a_refused_source_leaves_the_target_as_it_was(
    custom_sdk_file: Path, tmp_path: Path
) -> None:
    """Exit 2 means nothing was done: no target file is created, and a target that is the
    SDK's own file gains no table (the store is opened only once the source is good)."""
    path = custom_sdk_file
    new_target = tmp_path / "new.db"
    assert run_import(str(path), "--url", str(new_target)).exit_code == 2
    assert not new_target.exists()

    def tables() -> set[str]:
        with sqlite3.connect(path) as raw:
            found = {row[0] for row in raw.execute("SELECT name FROM sqlite_master")}
        raw.close()
        return found

    before = tables()
    assert run_import(str(path), "--url", str(path)).exit_code == 2
    assert tables() == before


def test_bad_options_exit_2(sdk_file: Path, sqlite_url: str) -> None:
    bad_order = run_import(str(sdk_file), "--url", sqlite_url, "--order", "newest")
    bad_target = run_import(str(sdk_file), "--url", "oracle://db/x")

    assert bad_order.exit_code == 2 and says(bad_order, "'newest' is not one of")
    assert bad_target.exit_code == 2 and says(bad_target, "unsupported database URL scheme")


def test_a_dry_run_writes_nothing_into_a_missing_or_foreign_target(
    custom_sdk_file: Path, tmp_path: Path
) -> None:
    """--dry-run opens the target read-only: a missing file is not created, another
    program's file gains no table, and the report is what an import would do."""
    named = ["--sessions-table", "my_sessions", "--messages-table", "my_messages", "--json"]
    missing = tmp_path / "new.db"
    report = run_import(str(custom_sdk_file), "--url", str(missing), "--dry-run", *named)
    assert report.exit_code == 0, report.output
    assert report_of(report)["totals"]["imported"] == 2 and not missing.exists()
    foreign = tmp_path / "other-app.db"
    with sqlite3.connect(foreign) as raw:
        raw.execute("CREATE TABLE notes (body TEXT)")
    raw.close()
    report = run_import(str(custom_sdk_file), "--url", str(foreign), "--dry-run", *named)
    assert report.exit_code == 0 and report_of(report)["totals"]["imported"] == 2
    with sqlite3.connect(foreign) as raw:
        assert [row[0] for row in raw.execute("SELECT name FROM sqlite_master")] == ["notes"]
    raw.close()
