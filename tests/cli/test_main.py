"""The `sessionstore` entry point: help, the installed module, and how errors become exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import assert_refused, db_state, run, run_compactctl


def test_no_arguments_shows_help() -> None:
    result = run()
    assert "migrate" in result.output and "demo" in result.output


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


def test_an_unknown_command_is_a_usage_error() -> None:
    assert_refused(run("frobnicate"), 2, "No such command 'frobnicate'")


def test_a_store_error_is_one_message_and_exit_2() -> None:
    result = run("sessions", "list", "--url", "mysql://u@h/db")
    assert_refused(result, 2, "error: unsupported database URL scheme 'mysql'")
    assert result.output.count("error:") == 1 and "Usage:" not in result.output


def test_a_compaction_error_exits_1_and_keeps_the_session(uncompacted: str) -> None:
    before = db_state(uncompacted)
    result = run("compact", "work", "--url", uncompacted, "--window", "100")
    assert_refused(result, 1, "compaction failed: InsufficientBudget")
    after = db_state(uncompacted)
    stored = ("messages", "compactions", "archives")  # events may record the failure
    assert [after[table] for table in stored] == [before[table] for table in stored]


def test_compactctl_maps_errors_the_same_way(uncompacted: str) -> None:
    result = run_compactctl("work", "--url", uncompacted, "--window", "100")
    assert_refused(result, 1, "compaction failed: InsufficientBudget")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("sqlite:////nonexistent-dir/x.db", "unable to open database file"),
        ("postgresql://postgres@127.0.0.1:1/x", "connection refused"),
    ],
)
def test_an_unreachable_database_is_one_message_and_exit_1(url: str, reason: str) -> None:
    result = run("sessions", "list", "--url", url)
    assert_refused(result, 1, "database unavailable:", reason, "sessionstore doctor")
