"""`sessionstore sessions list|show|export`."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from sessionstore.cli import app
from tests.cli.conftest import SECRET

runner = CliRunner()


def test_list_reports_every_session(seeded: str) -> None:
    listed = json.loads(runner.invoke(app, ["sessions", "list", "--url", seeded, "--json"]).output)
    by_id = {row["session_id"]: row for row in listed}
    assert set(by_id) == {"work", "other"}
    assert by_id["work"]["compactions"] == 1 and by_id["other"]["items"] == 1
    table = runner.invoke(app, ["sessions", "list", "--url", seeded])
    assert table.exit_code == 0 and "Sessions (2)" in table.output


def test_export_is_redacted_unless_asked(seeded: str, tmp_path: Path) -> None:
    out = tmp_path / "work.jsonl"
    done = runner.invoke(app, ["sessions", "export", "work", "--url", seeded, "--output", str(out)])
    assert done.exit_code == 0, done.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["content"].startswith("<COMPACT-SUMMARY v1>")
    assert "sk-proj" not in out.read_text() and "<REDACTED>" in lines[-1]["content"]
    raw = runner.invoke(app, ["sessions", "export", "work", "--url", seeded, "--no-redact"])
    assert SECRET in raw.output


def test_show_and_history(seeded: str) -> None:
    active = json.loads(
        runner.invoke(app, ["sessions", "show", "work", "--url", seeded, "--json"]).output
    )
    history = json.loads(
        runner.invoke(
            app, ["sessions", "show", "work", "--url", seeded, "--json", "--history"]
        ).output
    )
    assert len(history) > len(active)
    assert {row["kind"] for row in history} >= {"item", "carry", "summary"}
    assert all(row["seq"] >= active[0]["seq"] for row in active)


def test_missing_session_exits_1(seeded: str) -> None:
    result = runner.invoke(app, ["sessions", "show", "nope", "--url", seeded])
    assert result.exit_code == 1
