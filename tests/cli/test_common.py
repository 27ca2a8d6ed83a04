"""Exit codes and error messages (cli/_common.py), and `--config` on every command that opens
a store: an invalid or missing file is refused with exit 2, a message naming the problem,
and the database untouched."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
import typer

from sessionstore import (
    CompactionError,
    CompactionErrorReason,
    ConfigError,
    InvalidItemError,
    MissingKeyError,
    SealedDataError,
    StoreError,
    StoreTimeoutError,
    StoreUnavailableError,
    SummarizerUnavailableError,
)
from sessionstore.cli import _common
from tests.support.cli import BAD_CONFIG_PROBLEM, assert_refused, db_state, run, run_compactctl

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
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr  # one line


def test_every_problem_is_on_the_one_line(seeded: str, write_config: Callable[..., Path]) -> None:
    config = write_config(seeded, store={"ulr": "x"}, policy={"keep_recent_turns": "many"})
    result = run("sessions", "list", "--config", str(config))
    assert_refused(result, 2, "store.ulr is not a known setting", "policy.keep_recent_turns")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_config_that_is_not_yaml_is_refused(seeded: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("store: [unclosed\n  x: 1\n")
    refused = run("sessions", "list", "--config", str(broken))
    assert_refused(refused, 2, "not valid YAML")
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
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


ERROR_CASES = [
    (ConfigError(["policy.trigger_pct must be 0.0-1.0"]), 2, "error:"),
    (InvalidItemError("item #0 is not a mapping"), 2, "error:"),
    (MissingKeyError("k9"), 2, "error:"),
    (StoreUnavailableError("connection refused", outcome_known=True), 1, "database unavailable:"),
    (StoreTimeoutError("waited 5 s for the write lock"), 1, "timed out:"),
    (StoreError("a constraint refused the row"), 1, "database error:"),
    (CompactionError(CompactionErrorReason.CONFLICT, "lost 3 races"), 1, "compaction failed:"),
    (SummarizerUnavailableError("openai:gpt-4o-mini timed out"), 1, "summarizer failed:"),
    (SealedDataError("archive 3", "tag mismatch"), 1, "cannot open sealed data:"),
    (ConnectionRefusedError("[Errno 111] refused"), 1, "database unavailable:"),
]


@pytest.mark.parametrize(("error", "code", "label"), ERROR_CASES)
def test_each_error_has_its_exit_code_whatever_the_table_order(
    error: Exception, code: int, label: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _common.outcome_of(error) is not None
    assert _common.outcome_of(error).code == code  # type: ignore[union-attr]
    reversed_table = dict(reversed(list(_common.ERROR_OUTCOMES.items())))
    monkeypatch.setattr(_common, "ERROR_OUTCOMES", reversed_table)
    assert _common.outcome_of(error).code == code  # type: ignore[union-attr]

    def fail() -> None:
        with _common.user_errors():
            raise error

    with pytest.raises(typer.Exit) as exit_info:
        fail()
    assert exit_info.value.exit_code == code
    assert _common.outcome_of(error).label + ":" == label  # type: ignore[union-attr]


def test_a_bug_is_not_disguised_as_a_user_error() -> None:
    with pytest.raises(KeyError), _common.user_errors():
        raise KeyError("a bug")


def test_error_text_is_printed_verbatim_not_as_markup(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit), _common.user_errors():
        raise InvalidItemError("session [bold red]x[/] says \x1b[31mred\x1b[0m")
    err = capsys.readouterr().err
    assert "[bold red]x[/]" in err and "\x1b" not in err and "\\x1b[31mred" in err
