"""`--config` (cli/common.py) on every command that opens a store: a file that is invalid or
missing is refused with exit 2, a message naming the problem, and the database untouched."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import BAD_CONFIG_PROBLEM, assert_refused, db_state, run, run_compactctl

STORE_COMMANDS = [
    "migrate",
    "compact work",
    "sessions list",
    "sessions show work",
    "sessions export work",
    "events",
    "query 'SELECT 1'",
    "archive show work",
    "keys status",
    "keys rotate",
    "keys retire k1",
    "retention run",
    "retention policy set p --action delete_events --days 1",
    "retention policy list",
    "retention policy delete p",
]
COMMANDS = pytest.mark.parametrize("command", STORE_COMMANDS)


@COMMANDS
def test_an_invalid_or_missing_config_is_refused(
    seeded: str, bad_config: Path, tmp_path: Path, command: str
) -> None:
    args = shlex.split(command)
    before = db_state(seeded)
    invalid = run(*args, "--config", str(bad_config))
    assert_refused(invalid, 2, "invalid configuration", BAD_CONFIG_PROBLEM, "(got 3)")
    missing = run(*args, "--config", str(tmp_path / "nowhere.yaml"), "--url", seeded)
    assert_refused(missing, 2, "cannot read the file", "No such file or directory")
    assert db_state(seeded) == before


@pytest.mark.parametrize(
    ("sections", "problem"),
    [
        ({"store": {"ulr": "sqlite:///x.db"}}, "store.ulr is not a known setting"),
        ({"policy": {"keep_recent_turns": "many"}}, "policy.keep_recent_turns must be an integer"),
        ({"storage": {"adapter": "tape"}}, "storage.adapter must be one of sql, fs, s3"),
    ],
)
def test_each_problem_names_its_field(
    seeded: str, write_config: Callable[..., Path], sections: dict[str, object], problem: str
) -> None:
    result = run("sessions", "list", "--config", str(write_config(seeded, **sections)))
    assert_refused(result, 2, problem)


def test_a_config_that_is_not_yaml_is_refused(seeded: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("store: [unclosed\n")
    assert_refused(run("sessions", "list", "--config", str(broken)), 2, "not valid YAML")
    text = tmp_path / "compact.txt"
    text.write_text("store: {}\n")
    assert_refused(run("events", "--config", str(text)), 2, "use .yaml, .yml or .json")


def test_a_directory_is_not_a_config_file(seeded: str, tmp_path: Path) -> None:
    assert_refused(run("sessions", "list", "--config", str(tmp_path)), 2, "'--config'")


def test_the_environment_variable_is_the_same_option(
    seeded: str, config_file: Path, bad_config: Path
) -> None:
    good = run("sessions", "list", "--json", env={"SESSIONSTORE_CONFIG": str(config_file)})
    assert good.exit_code == 0 and '"work"' in good.output
    bad = run("sessions", "list", env={"SESSIONSTORE_CONFIG": str(bad_config)})
    assert_refused(bad, 2, BAD_CONFIG_PROBLEM)


def test_compactctl_refuses_an_invalid_config(seeded: str, bad_config: Path) -> None:
    before = db_state(seeded)
    result = run_compactctl("work", "--config", str(bad_config))
    assert_refused(result, 2, BAD_CONFIG_PROBLEM)
    assert db_state(seeded) == before
