"""`sessionstore events`: filters, JSON lines, bounded --follow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import assert_refused, mentions, run


def test_filters_by_session_and_type(seeded: str) -> None:
    result = run("events", "--url", seeded, "--session", "work", "--type", "compact.*", "--json")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    names = {row["event"] for row in rows}
    assert {"compact.trigger_decision", "compact.summary_created"} <= names
    assert all(row["session_id"] == "work" for row in rows)
    only = run("events", "--url", seeded, "--type", "compact.archival", "--json")
    assert {json.loads(line)["event"] for line in only.output.splitlines()} == {"compact.archival"}


def test_follow_stops_after_its_window(seeded: str) -> None:
    result = run("events", "--url", seeded, "--follow", "--follow-seconds", "0.6", "--limit", "5")
    assert result.exit_code == 0 and "compact." in result.output


def test_bad_since_is_a_usage_error(seeded: str) -> None:
    result = run("events", "--url", seeded, "--since", "yesterday")
    assert result.exit_code == 2
    assert_refused(result, 2, "'--since'", "datetime")


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--limit", "0"], "'--limit': Input should be greater than or equal to 1"),
        (["--limit", "-4"], "'--limit': Input should be greater than or equal to 1"),
        (["--limit", "1000001"], "'--limit': Input should be less than or equal to 1000000"),
        (["--follow", "--follow-seconds", "-1"], "'--follow-seconds'"),
    ],
)
def test_bad_option_values_are_usage_errors(seeded: str, args: list[str], problem: str) -> None:
    assert_refused(run("events", "--url", seeded, *args), 2, problem)


def test_a_filter_that_matches_nothing_says_so(seeded: str) -> None:
    result = run("events", "--url", seeded, "--type", "compact.nothing_like_this")
    assert result.exit_code == 0
    assert mentions(result, "no events match --type 'compact.nothing_like_this'")
    quiet = run("events", "--url", seeded, "--session", "nope", "--json")
    assert quiet.exit_code == 0 and quiet.output == ""


def test_the_config_file_names_the_database(config_file: Path) -> None:
    result = run("events", "--config", str(config_file), "--session", "work", "--json")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert "compact.summary_created" in {row["event"] for row in rows}
