"""The command line, through typer's runner and as the installed entry point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from sessionstore.cli import app
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
    result = runner.invoke(app, ["demo", "--url", db_url])
    assert result.exit_code == 0, result.output
    assert "identical: yes" in result.output
    assert "get_weather: 2 call(s)" in result.output


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
