"""The command line, through typer's runner and as the installed entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from sessionstore.cli import app, compactctl_app
from sessionstore.migrations import head_revision

runner = CliRunner()


def test_migrate_creates_then_reports_up_to_date(db_url: str, tmp_path: Path) -> None:
    fresh = f"sqlite:///{tmp_path / 'm.db'}" if db_url.startswith("sqlite") else db_url
    first = runner.invoke(app, ["migrate", "--url", fresh])
    assert first.exit_code == 0, first.output
    again = runner.invoke(app, ["migrate", "--url", fresh])
    assert again.exit_code == 0
    assert f"already at revision {head_revision()}" in again.output


def test_demo_prints_the_reloaded_context(db_url: str) -> None:
    result = runner.invoke(app, ["demo", "--url", db_url, "--window", "8000"])
    assert result.exit_code == 0, result.output
    assert "identical: yes" in result.output
    assert "get_weather: 2 call(s)" in result.output
    assert "never overflowed" in result.output and "COMPACT-SUMMARY" in result.output


def test_bad_url_exits_2_with_one_clear_line(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "sessionstore.cli", "migrate", "--url", "mysql://u@h/db"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert completed.returncode == 2
    assert "unsupported database URL scheme 'mysql'" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_no_arguments_shows_help() -> None:
    result = runner.invoke(app, [])
    assert "migrate" in result.output and "demo" in result.output


def _seed(url: str) -> None:
    import asyncio

    from sessionstore import SessionStore
    from tests.support.histories import coding_session

    async def seed() -> None:
        async with SessionStore(url, create_tables=True) as store:
            await store.append("work", coding_session(12))

    asyncio.run(seed())


def test_compact_dry_run_diff_shows_fates_and_changes_nothing(db_url: str) -> None:
    _seed(db_url)
    result = runner.invoke(app, ["compact", "work", "--url", db_url, "--dry-run", "--diff"])
    assert result.exit_code == 0, result.output
    assert "summarized" in result.output and "recent" in result.output
    assert "would go from" in result.output
    again = runner.invoke(app, ["compact", "work", "--url", db_url, "--dry-run", "--json"])
    payload = json.loads(again.output)
    assert payload["compacted"] is False and payload["version"] is None
    fates = {row["fate"] for row in payload["rows"]}
    assert {"summarized", "recent", "tool pair"} <= fates


def test_compact_writes_a_summary_and_reports_it(db_url: str) -> None:
    _seed(db_url)
    result = runner.invoke(app, ["compact", "work", "--url", db_url, "--strategy", "decision_log"])
    assert result.exit_code == 0, result.output
    assert "Wrote <COMPACT-SUMMARY v1> (decision_log)" in result.output
    second = json.loads(runner.invoke(app, ["compact", "work", "--url", db_url, "--json"]).output)
    assert second["compacted"] is False and "nothing to summarize" in second["skipped_reason"]


def test_compact_rejects_an_unknown_strategy_with_the_valid_names(db_url: str) -> None:
    _seed(db_url)
    result = runner.invoke(app, ["compact", "work", "--url", db_url, "--strategy", "poetry"])
    assert result.exit_code == 2
    assert "task_state" in result.output


def test_compactctl_is_the_same_command(sqlite_url: str) -> None:
    _seed(sqlite_url)
    result = runner.invoke(compactctl_app, ["work", "--url", sqlite_url, "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "would go from" in result.output


def test_retention_policies_and_run_through_the_cli(db_url: str) -> None:
    _seed(db_url)
    made = runner.invoke(
        app,
        [
            "retention",
            "policy",
            "set",
            "events-1d",
            "--action",
            "delete_events",
            "--days",
            "1",
            "--url",
            db_url,
        ],
    )
    assert made.exit_code == 0, made.output
    listed = json.loads(
        runner.invoke(app, ["retention", "policy", "list", "--url", db_url, "--json"]).output
    )
    assert listed == [
        {
            "name": "events-1d",
            "action": "delete_events",
            "older_than_days": 1,
            "keep_archives": True,
            "enabled": True,
        }
    ]
    dry = runner.invoke(app, ["retention", "run", "--dry-run", "--json", "--url", db_url])
    assert json.loads(dry.output) == {"dry_run": True, "counts": {"events-1d": 0}}
    gone = runner.invoke(app, ["retention", "policy", "delete", "missing", "--url", db_url])
    assert gone.exit_code == 1 and "no policy named 'missing'" in gone.output


def test_retention_rejects_bad_arguments(sqlite_url: str) -> None:
    bad_action = runner.invoke(
        app,
        [
            "retention",
            "policy",
            "set",
            "x",
            "--action",
            "shred",
            "--days",
            "3",
            "--url",
            sqlite_url,
        ],
    )
    assert bad_action.exit_code == 2 and "shred" in bad_action.output
    bad_days = runner.invoke(
        app,
        [
            "retention",
            "policy",
            "set",
            "x",
            "--action",
            "delete_events",
            "--days",
            "0",
            "--url",
            sqlite_url,
        ],
    )
    assert bad_days.exit_code == 2


def test_keys_generate_rotate_retire_and_archive_show(tmp_path: Path) -> None:
    import asyncio

    from sessionstore import SessionStore
    from sessionstore.compaction import CompactConfig, CompactManager
    from sessionstore.crypto import Keyring

    url = f"sqlite:///{tmp_path / 'k.db'}"
    key_file = tmp_path / "keys.json"
    assert (
        runner.invoke(app, ["keys", "generate", "k1", "--key-file", str(key_file)]).exit_code == 0
    )
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"

    async def seed() -> None:
        async with SessionStore(url, keyring=Keyring.from_file(key_file)) as store:
            manager = CompactManager(CompactConfig(storage=store))
            items = []
            for n in range(10):
                items += [
                    {"role": "user", "content": f"turn {n}"},
                    {
                        "role": "assistant",
                        "content": f"saved token=tok_{n}_SECRETVALUE for turn {n}",
                    },
                ]
            await manager.append("s", items)
            await manager.compact("s")

    asyncio.run(seed())
    env = {"SESSIONSTORE_KEY_FILE": str(key_file)}
    status = json.loads(
        runner.invoke(app, ["keys", "status", "--url", url, "--json"], env=env).output
    )
    assert status["active"] == "k1" and status["keys"][0]["archives"] == 1
    shown = runner.invoke(app, ["archive", "show", "s", "--url", url, "--json"], env=env)
    assert (
        shown.exit_code == 0 and "SECRETVALUE" not in shown.output and "<REDACTED>" in shown.output
    )
    busy = runner.invoke(app, ["keys", "retire", "k1", "--url", url], env=env)
    assert busy.exit_code == 2 and "still protects 1 archive" in busy.output
    assert (
        runner.invoke(app, ["keys", "generate", "k2", "--key-file", str(key_file)]).exit_code == 0
    )
    rotated = json.loads(
        runner.invoke(app, ["keys", "rotate", "--url", url, "--json"], env=env).output
    )
    assert rotated == {"active": "k2", "rewrapped": 1, "usage": {"k2": 1}}
    retired = runner.invoke(
        app, ["keys", "retire", "k1", "--url", url, "--key-file", str(key_file)], env=env
    )
    assert retired.exit_code == 0, retired.output
    assert Keyring.from_file(key_file).ids == ("k2",)
    again = runner.invoke(app, ["archive", "show", "s", "--url", url, "--json"], env=env)
    assert again.exit_code == 0 and again.output.count('"archive_id"') >= 1
