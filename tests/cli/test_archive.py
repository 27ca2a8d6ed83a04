"""`sessionstore archive show`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from sessionstore import SessionStore
from tests.support.cli import NO_KEYS, assert_refused, db_state, run


def test_json_lines_parse_and_name_their_archive(seeded: str) -> None:
    result = run("archive", "show", "work", "--url", seeded, "--json", env=NO_KEYS)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records and all(isinstance(record["archive_id"], int) for record in records)


def test_the_table_names_the_compaction_and_the_key(seeded: str) -> None:
    result = run("archive", "show", "work", "--url", seeded, env=NO_KEYS)
    assert result.exit_code == 0, result.output
    assert "compaction 1" in result.output and "none: unencrypted" in result.output


@pytest.mark.parametrize("redaction", ["--redact", "--no-redact"])
def test_an_unknown_session_is_reported_and_nothing_is_recorded(
    seeded: str, redaction: str
) -> None:
    before = db_state(seeded)
    result = run("archive", "show", "nope", "--url", seeded, redaction)
    assert_refused(result, 1, "no session 'nope'", "sessionstore sessions list")
    assert db_state(seeded) == before


def test_an_unknown_compaction_is_reported(seeded: str) -> None:
    result = run("archive", "show", "work", "--url", seeded, "--compaction", "999")
    assert_refused(result, 1, "session 'work' has no archive of compaction 999")


@pytest.mark.parametrize("value", ["0", "-3", "first"])
def test_a_bad_compaction_id_is_a_usage_error(seeded: str, value: str) -> None:
    result = run("archive", "show", "work", "--url", seeded, "--compaction", value)
    assert_refused(result, 2, "'--compaction'")


def test_a_session_without_archives_is_not_an_error(seeded: str) -> None:
    result = run("archive", "show", "other", "--url", seeded)
    assert result.exit_code == 0 and "no archives for session 'other'" in result.output


def test_the_config_files_redaction_patterns_apply(
    seeded: str, write_config: Callable[..., Path]
) -> None:
    config = write_config(seeded, redaction={"extra_patterns": [r"module_\d+"]})
    plain = run("archive", "show", "work", "--url", seeded, "--json", env=NO_KEYS)
    assert "module_0" in plain.output
    redacted = run("archive", "show", "work", "--config", str(config), "--json", env=NO_KEYS)
    assert redacted.exit_code == 0, redacted.output
    assert "module_0" not in redacted.output and "<REDACTED>" in redacted.output


def test_a_reused_session_id_never_shows_the_deleted_sessions_archives_as_its_own(
    seeded: str,
) -> None:
    before = [
        json.loads(line)
        for line in run(
            "archive", "show", "work", "--url", seeded, "--json", env=NO_KEYS
        ).stdout.splitlines()
    ]
    assert before
    deleted = run("sessions", "delete", "work", "--yes", "--url", seeded)
    assert deleted.exit_code == 0, deleted.output
    # The session is gone: its kept archives are shown, marked as a deleted session's.
    gone = run("archive", "show", "work", "--url", seeded, env=NO_KEYS)
    assert gone.exit_code == 0 and "of a deleted session" in gone.stdout
    # The id is used again, and never compacted: the old archives are not its own.
    asyncio.run(_append(seeded, "work"))
    reused = run("archive", "show", "work", "--url", seeded, env=NO_KEYS)
    assert reused.exit_code == 0, reused.output
    assert "no archives for session 'work'" in reused.stdout
    assert f"note: {len({r['archive_id'] for r in before})} archive(s) of a deleted session" in (
        reused.stderr
    )
    older = run("archive", "show", "work", "--url", seeded, "--earlier", "--json", env=NO_KEYS)
    assert [json.loads(line) for line in older.stdout.splitlines()] == before


async def _append(url: str, session_id: str) -> None:
    async with SessionStore(url) as store:
        await store.append(session_id, [{"role": "user", "content": "a new session"}])
