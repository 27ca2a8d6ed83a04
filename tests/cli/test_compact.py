"""`sessionstore compact` and `compactctl`: run, dry-run, diff; the config file's policy."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import assert_refused, db_state, run, run_compactctl


def _fates(result_output: str) -> Counter[str]:
    return Counter(row["fate"] for row in json.loads(result_output)["rows"])


def test_compact_dry_run_diff_shows_fates_and_changes_nothing(uncompacted: str) -> None:
    before = db_state(uncompacted)
    result = run("compact", "work", "--url", uncompacted, "--dry-run", "--diff")
    assert result.exit_code == 0, result.output
    assert "summarized" in result.output and "recent" in result.output
    assert "would go from" in result.output
    again = run("compact", "work", "--url", uncompacted, "--dry-run", "--json")
    payload = json.loads(again.output)
    assert payload["compacted"] is False and payload["version"] is None
    assert {"summarized", "recent", "tool pair"} <= set(_fates(again.output))
    after = db_state(uncompacted)
    assert (after["messages"], after["compactions"]) == (before["messages"], 0)


def test_compact_writes_a_summary_and_reports_it(uncompacted: str) -> None:
    result = run("compact", "work", "--url", uncompacted, "--strategy", "decision_log")
    assert result.exit_code == 0, result.output
    assert "Wrote <COMPACT-SUMMARY v1> (decision_log)" in result.output
    second = json.loads(run("compact", "work", "--url", uncompacted, "--json").output)
    assert second["compacted"] is False and "nothing to summarize" in second["skipped_reason"]


def test_compact_rejects_an_unknown_strategy_with_the_valid_names(uncompacted: str) -> None:
    before = db_state(uncompacted)
    result = run("compact", "work", "--url", uncompacted, "--strategy", "poetry")
    assert result.exit_code == 2
    assert "task_state" in result.output
    assert_refused(result, 2, "--strategy", "unknown summarization strategy 'poetry'")
    assert db_state(uncompacted) == before


@pytest.mark.parametrize("mode", [[], ["--dry-run"]])
def test_an_unknown_session_is_reported_and_nothing_is_written(
    seeded: str, mode: list[str]
) -> None:
    before = db_state(seeded)
    result = run("compact", "nope", "--url", seeded, *mode)
    assert_refused(result, 1, "no session 'nope'", "sessionstore sessions list")
    assert db_state(seeded) == before


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--window", "0"], "'--window': Input should be greater than or equal to 1"),
        (["--window", "big"], "'--window': Input should be a valid integer"),
        (["--bogus"], "No such option: --bogus"),
        ([], "Missing argument 'session_id'"),
    ],
)
def test_bad_options_are_usage_errors(uncompacted: str, args: list[str], problem: str) -> None:
    session = [] if not args else ["work"]
    before = db_state(uncompacted)
    assert_refused(run("compact", *session, "--url", uncompacted, *args), 2, problem)
    assert db_state(uncompacted) == before


def test_compactctl_is_the_same_command(uncompacted: str) -> None:
    result = run_compactctl("work", "--url", uncompacted, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "would go from" in result.output
    missing = run_compactctl("nope", "--url", uncompacted)
    assert_refused(missing, 1, "no session 'nope'")


def test_the_config_files_policy_sink_and_exporter_apply(
    uncompacted: str,
    tmp_path: Path,
    write_config: Callable[..., Path],
    collected: list[dict[str, Any]],
) -> None:
    archive_dir = tmp_path / "archive"
    config = write_config(
        uncompacted,
        policy={"keep_recent_turns": 1, "keep_tool_io_pairs": 0},
        storage={"adapter": "fs", "path": str(archive_dir)},
        telemetry={"exporters": ["callback"], "callback": "tests.cli.conftest:collect"},
    )
    default = _fates(run("compact", "work", "--url", uncompacted, "--dry-run", "--json").output)
    planned = run("compact", "work", "--config", str(config), "--dry-run", "--json")
    assert planned.exit_code == 0, planned.output
    assert "tool pair" not in _fates(planned.output)
    assert _fates(planned.output)["recent"] < default["recent"]

    done = run("compact", "work", "--config", str(config), "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["version"] == 1
    written = {path.name for path in (archive_dir / "work").iterdir()}
    assert {"transcript-pre-compact-001.jsonl", "summary-001.json"} <= written
    assert "compact.summary_created" in {event["event"] for event in collected}


def test_url_beats_the_config_files_database(
    uncompacted: str, tmp_path: Path, write_config: Callable[..., Path]
) -> None:
    elsewhere = tmp_path / "never.db"
    config = write_config(f"sqlite:///{elsewhere}")
    result = run("compact", "work", "--config", str(config), "--url", uncompacted, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["compacted"] is True
    assert not elsewhere.exists()
