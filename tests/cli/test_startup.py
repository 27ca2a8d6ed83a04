"""Start-up: the root command imports none of its commands, and its table of commands
says what each command's own help says (issue #33: `--help` took 1.0-1.6 s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sessionstore.cli._lazy import COMMANDS, load_command

# Run as `sessionstore ...` is, then report which heavy packages the process imported.
_PROBE = """
import sys
sys.argv = ["sessionstore", *sys.argv[1:]]
from sessionstore.cli import main
code = 0
try:
    main()
except SystemExit as exit:
    code = exit.code
heavy = ("sqlalchemy", "sqlglot", "pydantic", "asyncpg", "aiosqlite",
         "sessionstore._store._session_store", "sessionstore.compaction._manager", "agents")
print("IMPORTED", *sorted(name for name in heavy if name in sys.modules), file=sys.stderr)
sys.exit(code)
"""


def _imported(*args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, timeout=120
    )
    line = [row for row in done.stderr.splitlines() if row.startswith("IMPORTED")][-1]
    return done, line.split()[1:]


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"], ["--bogus-option"]])
def test_help_version_and_usage_errors_import_no_command(args: list[str]) -> None:
    done, imported = _imported(*args)
    assert imported == [], f"sessionstore {' '.join(args)} imported {imported}"
    if args[0] in ("--help", "-h"):
        assert all(name in done.stdout for name in COMMANDS)


def test_an_unknown_command_is_one_line_and_exit_2() -> None:
    done, _ = _imported("sesions", "list")
    errors = [line for line in done.stderr.splitlines() if not line.startswith("IMPORTED")]
    assert done.returncode == 2 and len(errors) == 1 and "sesions" in errors[0], done.stderr


@pytest.mark.slow  # drives a process: left out of the everyday subset
def test_a_command_loads_what_it_needs_and_no_more() -> None:
    done, imported = _imported("schema", "--help")
    assert done.returncode == 0 and "sqlalchemy" in imported
    assert "sqlglot" not in imported  # only query and --where parse SQL


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_root_summary_is_the_start_of_the_commands_own_help(name: str) -> None:
    command = load_command(name)
    first = " ".join((command.help or "").split("\n\n")[0].split())
    assert command.name == name
    assert first.startswith(COMMANDS[name].summary.rstrip(".")), (name, first)


@pytest.mark.slow  # drives a process: left out of the everyday subset
def test_a_sqlite_command_never_loads_the_postgresql_driver(tmp_path: Path) -> None:
    """A command on a SQLite file runs without importing asyncpg (about 40 ms of start-up):
    each backend's runner, and the driver's error classes, load with the first use."""
    url = f"sqlite:///{tmp_path / 'small.db'}"
    done, imported = _imported("migrate", "--url", url)
    assert done.returncode == 0, done.stderr
    done, imported = _imported("sessions", "list", "--url", url)
    assert done.returncode == 0, done.stderr
    assert "sqlalchemy" in imported and "asyncpg" not in imported, imported
