"""`sessionstore events`: filters, JSON lines, bounded --follow."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sessionstore.cli import app

runner = CliRunner()


def test_filters_by_session_and_type(seeded: str) -> None:
    result = runner.invoke(
        app, ["events", "--url", seeded, "--session", "work", "--type", "compact.*", "--json"]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    names = {row["event"] for row in rows}
    assert {"compact.trigger_decision", "compact.summary_created"} <= names
    assert all(row["session_id"] == "work" for row in rows)
    only = runner.invoke(app, ["events", "--url", seeded, "--type", "compact.archival", "--json"])
    assert {json.loads(line)["event"] for line in only.output.splitlines()} == {"compact.archival"}


def test_follow_stops_after_its_window(seeded: str) -> None:
    result = runner.invoke(
        app, ["events", "--url", seeded, "--follow", "--follow-seconds", "0.6", "--limit", "5"]
    )
    assert result.exit_code == 0 and "compact." in result.output


def test_bad_since_is_a_usage_error(seeded: str) -> None:
    assert runner.invoke(app, ["events", "--url", seeded, "--since", "yesterday"]).exit_code == 2
