"""`sessionstore sessions show|export` (list: test_sessions_list.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from agents import SQLiteSession

from sessionstore import HistoryPoint, SessionStore
from tests.support.cli import (
    EXTRA_PATTERN,
    NO_KEYS,
    SECRET,
    assert_refused,
    db_state,
    mentions,
    run,
)


def test_export_is_redacted_unless_asked(seeded: str, tmp_path: Path) -> None:
    out = tmp_path / "work.jsonl"
    done = run("sessions", "export", "work", "--url", seeded, "--output", str(out))
    assert done.exit_code == 0, done.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["content"].startswith("<COMPACT-SUMMARY v1>")
    assert "sk-proj" not in out.read_text() and "<REDACTED>" in lines[-1]["content"]
    raw = run("sessions", "export", "work", "--url", seeded, "--no-redact")
    assert SECRET in raw.output


def test_show_and_history(seeded: str) -> None:
    active = json.loads(run("sessions", "show", "work", "--url", seeded, "--json").stdout)
    history = json.loads(
        run("sessions", "show", "work", "--url", seeded, "--json", "--history").output
    )
    assert len(history) > len(active)
    assert {row["kind"] for row in history} >= {"item", "carry", "summary"}
    assert all(row["seq"] >= active[0]["seq"] for row in active)


def test_missing_session_exits_1(seeded: str) -> None:
    result = run("sessions", "show", "nope", "--url", seeded)
    assert result.exit_code == 1


@pytest.mark.parametrize("command", ["show", "export"])
@pytest.mark.parametrize("redaction", ["--redact", "--no-redact"])
def test_an_unknown_session_is_reported_and_nothing_is_recorded(
    seeded: str, tmp_path: Path, command: str, redaction: str
) -> None:
    before = db_state(seeded)
    output = ["--output", str(tmp_path / "out.jsonl")] if command == "export" else []
    result = run("sessions", command, "nope", "--url", seeded, redaction, *output)
    assert_refused(result, 1, "no session 'nope'", "sessionstore sessions list")
    assert db_state(seeded) == before
    assert not (tmp_path / "out.jsonl").exists()


def test_export_to_an_unwritable_path_says_so(seeded: str, tmp_path: Path) -> None:
    plain_file = tmp_path / "plain-file"
    plain_file.write_text("x")
    result = run(
        "sessions", "export", "work", "--url", seeded, "--output", str(plain_file / "w.jsonl")
    )
    assert_refused(result, 2, "--output", "cannot write", "Not a directory")


def test_the_config_file_names_the_database(config_file: Path) -> None:
    result = run("sessions", "list", "--config", str(config_file), "--json")
    assert result.exit_code == 0, result.output
    assert {row["session_id"] for row in json.loads(result.stdout)} == {"work", "other"}


def test_the_config_files_extra_pattern_redacts_show(seeded: str, config_file: Path) -> None:
    plain = run("sessions", "show", "other", "--url", seeded, "--json")
    assert json.loads(plain.stdout)[0]["item"]["content"] == EXTRA_PATTERN
    shown = run("sessions", "show", "other", "--config", str(config_file), "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)[0]["item"]["content"] == "<REDACTED>"


def test_url_beats_the_config_files_database(
    seeded: str, tmp_path: Path, write_config: Callable[..., Path]
) -> None:
    elsewhere = tmp_path / "never.db"
    config = write_config(f"sqlite:///{elsewhere}")
    result = run("sessions", "list", "--config", str(config), "--url", seeded, "--json")
    assert result.exit_code == 0, result.output
    assert {row["session_id"] for row in json.loads(result.stdout)} == {"work", "other"}
    assert not elsewhere.exists()


def test_export_is_exactly_the_context_the_model_sees(seeded: str) -> None:
    async def pop_then_load() -> list[dict[str, Any]]:
        async with SessionStore(seeded) as store:
            await store.append("work", [{"role": "user", "content": "a typo"}])
            await store.pop("work")  # a tombstone: the popped item must not be exported
            return await store.load_context("work")

    expected = asyncio.run(pop_then_load())
    exported = run("sessions", "export", "work", "--url", seeded, "--no-redact")
    assert exported.exit_code == 0, exported.output
    lines = [json.loads(line) for line in exported.stdout.splitlines() if line.startswith("{")]
    assert lines == expected


def test_show_takes_a_seq_range_a_limit_and_a_tail(seeded: str) -> None:
    history = json.loads(
        run("sessions", "show", "work", "--history", "--json", "--url", seeded).stdout
    )
    seqs = [row["seq"] for row in history]
    tail = json.loads(
        run(
            "sessions", "show", "work", "--history", "--json", "--tail", "3", "--url", seeded
        ).stdout
    )
    assert [row["seq"] for row in tail] == seqs[-3:]
    ranged = run(
        "sessions", "show", "work", "--history", "--json", "--seq", "2..4", "--url", seeded
    )
    assert [row["seq"] for row in json.loads(ranged.stdout)] == [2, 3, 4]
    assert f"3 of {len(seqs)} rows shown" in ranged.output
    first = json.loads(
        run(
            "sessions", "show", "work", "--history", "--json", "--limit", "2", "--url", seeded
        ).stdout
    )
    assert [row["seq"] for row in first] == seqs[:2]
    assert_refused(run("sessions", "show", "work", "--seq", "4-2", "--url", seeded), 2, "10..20")


def test_json_timestamps_are_iso_8601_with_a_zone(seeded: str) -> None:
    listed = json.loads(run("sessions", "list", "--json", "--url", seeded).stdout)
    shown = json.loads(run("sessions", "show", "work", "--json", "--url", seeded).stdout)
    for stamp in [row["updated_at"] for row in listed] + [row["created_at"] for row in shown]:
        assert datetime.fromisoformat(stamp).utcoffset() is not None, stamp
        assert "T" in stamp


def test_delete_removes_the_session_and_keeps_its_archives_readable(seeded: str) -> None:
    refused = run("sessions", "delete", "work", "--url", seeded, input="n\n")
    assert refused.exit_code == 1 and "nothing was deleted" in refused.output
    deleted = run("sessions", "delete", "work", "--yes", "--url", seeded)
    assert deleted.exit_code == 0 and "deleted session 'work'" in deleted.output
    assert "work" not in run("sessions", "list", "--url", seeded).stdout
    archives = run("archive", "show", "work", "--json", "--url", seeded, env=NO_KEYS)
    assert archives.exit_code == 0, archives.output
    assert len(archives.stdout.splitlines()) > 0
    listed = json.loads(run("archive", "list", "work", "--json", "--url", seeded).stdout)
    assert listed and all(row["session_id"] == "work" for row in listed)
    assert_refused(run("sessions", "delete", "work", "--yes", "--url", seeded), 1, "no session")


def _context(url: str, *options: str) -> list[dict[str, Any]]:
    exported = run("sessions", "export", "work", "--url", url, "--no-redact", *options)
    assert exported.exit_code == 0, exported.output
    return [json.loads(line) for line in exported.stdout.splitlines() if line.startswith("{")]


def test_show_and_export_as_of_a_point_read_the_context_then(seeded: str) -> None:
    async def load_v1() -> list[dict[str, Any]]:
        async with SessionStore(seeded) as store:
            return await store.load_context("work", as_of=HistoryPoint.after_version(1))

    compacted = asyncio.run(load_v1())
    assert _context(seeded, "--as-of", "v1") == compacted
    assert SECRET not in json.dumps(compacted) and compacted != _context(seeded)
    before_turn_1 = run("sessions", "show", "work", "--as-of", "turn:1", "--url", seeded)
    assert_refused(before_turn_1, 1, "had no rows in its active context then")
    assert_refused(
        run("sessions", "show", "work", "--as-of", "v9", "--url", seeded),
        2,
        "no version 9 to go back to",
    )
    assert_refused(
        run("sessions", "show", "work", "--as-of", "yesterday", "--url", seeded),
        2,
        "'yesterday' is not a point in history: use a seq (120)",
    )


def test_rewind_asks_then_restores_the_context_and_deletes_nothing(seeded: str) -> None:
    before = db_state(seeded)
    refused = run("sessions", "rewind", "work", "--to", "v1", "--url", seeded, input="n\n")
    assert refused.exit_code == 1 and "nothing was changed" in refused.output
    assert db_state(seeded) == before
    assert_refused(run("sessions", "rewind", "work", "--to", "0x", "--url", seeded), 2, "--to")
    assert db_state(seeded) == before
    compacted = _context(seeded, "--as-of", "v1")
    done = run("sessions", "rewind", "work", "--to", "v1", "--yes", "--url", seeded)
    assert done.exit_code == 0, done.output
    assert "nothing was deleted" in done.output
    assert _context(seeded) == compacted  # the message with the secret is gone from context
    after = db_state(seeded)
    assert after["messages"] == before["messages"] + 1 + len(compacted)  # marker + copies
    assert run("verify", "work", "--url", seeded).exit_code == 0


def test_fork_starts_a_branch_that_shares_the_rows(seeded: str) -> None:
    before = db_state(seeded)
    assert_refused(
        run("sessions", "fork", "work", "--to", "b", "--at", "soon", "--url", seeded), 2, "--at"
    )
    taken = run("sessions", "fork", "work", "--to", "work", "--url", seeded)
    assert_refused(taken, 2, "that session already exists")
    assert db_state(seeded) == before
    done = run("sessions", "fork", "work", "--to", "retry", "--at", "v1", "--url", seeded)
    assert done.exit_code == 0, done.output
    assert "into 'retry'" in done.output and "no rows copied" in done.output
    after = db_state(seeded)
    assert (after["messages"], after["sessions"]) == (before["messages"], before["sessions"] + 1)
    exported = run("sessions", "export", "retry", "--url", seeded, "--no-redact")
    assert [json.loads(line) for line in exported.stdout.splitlines()] == _context(
        seeded, "--as-of", "v1"
    )
    assert run("verify", "retry", "--url", seeded).exit_code == 0
    listed = {
        row["session_id"]: row
        for row in json.loads(run("sessions", "list", "--json", "--url", seeded).stdout)
    }
    assert listed["retry"]["branch_of"].startswith("work @ seq ")
    assert listed["work"]["branch_of"] is None
    refused = run("sessions", "delete", "work", "--url", seeded)  # refused before any prompt
    assert_refused(refused, 2, "live branch")
    unwritten = run("sessions", "show", "retry", "--history", "--url", seeded)
    assert unwritten.exit_code == 1
    assert "no rows of its own yet: it shares 'work'" in unwritten.output


def test_fork_refuses_an_empty_id_and_creates_no_file_at_a_mistyped_url(
    seeded: str, tmp_path: Path
) -> None:
    assert_refused(run("sessions", "fork", "work", "--to", " ", "--url", seeded), 2, "--to")
    typo = tmp_path / "sesions.db"
    missing = run("sessions", "fork", "work", "--to", "b", "--url", f"sqlite:///{typo}")
    assert missing.exit_code == 2 and not typo.exists()


def test_a_tail_of_the_active_context_is_its_last_rows(seeded: str) -> None:
    active = json.loads(run("sessions", "show", "work", "--json", "--url", seeded).stdout)
    shown = run("sessions", "show", "work", "--json", "--tail", "2", "--url", seeded)
    assert json.loads(shown.stdout) == active[-2:]
    assert "note: the last 2 rows shown (--tail)" in shown.output
    everything = run("sessions", "show", "work", "--json", "--tail", "999", "--url", seeded)
    assert json.loads(everything.stdout) == active and "note" not in everything.output


def test_a_session_only_the_sdks_tables_hold_is_named_with_the_import(tmp_path: Path) -> None:
    path = tmp_path / "conversations.db"

    async def write() -> None:
        sdk = SQLiteSession("u5", path)
        await sdk.add_items([{"role": "user", "content": "hi"}])
        sdk.close()

    asyncio.run(write())
    unmigrated = run("sessions", "list", "--url", str(path))
    assert_refused(unmigrated, 2, "It holds the Agents SDK's tables (agent_messages)")
    assert mentions(unmigrated, f"sessionstore import 'sqlite:///{path}' --url 'sqlite:///{path}'")
    assert run("migrate", "--url", str(path)).exit_code == 0
    result = run("sessions", "show", "u5", "--url", str(path))
    assert_refused(result, 1, "no session 'u5'", "agent_messages holds it", "sessionstore import")
    imported = run("import", f"sqlite:///{path}", "--url", f"sqlite:///{path}")
    assert imported.exit_code == 0, imported.output
    assert "hi" in run("sessions", "show", "u5", "--url", str(path)).stdout
    other = run("sessions", "show", "nope", "--url", str(path))
    assert_refused(other, 1, "no session 'nope'", "sessions list")
    assert "agent_messages" not in other.output
