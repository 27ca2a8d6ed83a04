"""`sessionstore demo`."""

from __future__ import annotations

import pytest

from tests.cli.conftest import assert_refused, db_state, run


def test_demo_prints_the_reloaded_context(db_url: str) -> None:
    result = run("demo", "--url", db_url, "--window", "8000")
    assert result.exit_code == 0, result.output
    assert "identical: yes" in result.output
    assert "get_weather: 2 call(s)" in result.output
    assert "never overflowed" in result.output and "COMPACT-SUMMARY" in result.output


@pytest.mark.parametrize(
    ("option", "value", "problem"),
    [
        ("--window", "0", "'--window': Input should be greater than or equal to 4000"),
        ("--window", "3999", "'--window': Input should be greater than or equal to 4000"),
        ("--window", "many", "'--window': Input should be a valid integer"),
        ("--factor", "0", "'--factor': Input should be greater than or equal to 1"),
    ],
)
def test_bad_sizes_are_refused_before_anything_runs(
    db_url: str, option: str, value: str, problem: str
) -> None:
    before = db_state(db_url)
    assert_refused(run("demo", "--url", db_url, option, value), 2, problem)
    assert db_state(db_url) == before
