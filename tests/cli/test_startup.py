"""Start-up: the root command imports none of its commands, and its table of commands
says what each command's own help says (issue #33: `--help` took 1.0-1.6 s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sessionstore.cli._lazy import COMMANDS, SESSIONS_COMMANDS, Entry, load_command

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


@pytest.mark.parametrize(
    ("table", "name"),
    [(COMMANDS, name) for name in COMMANDS]
    + [(SESSIONS_COMMANDS, name) for name in SESSIONS_COMMANDS],
)
def test_the_groups_summary_is_the_start_of_the_commands_own_help(
    table: dict[str, Entry], name: str
) -> None:
    command = load_command(name, table)
    first = " ".join((command.help or "").split("\n\n")[0].split())
    assert command.name == name
    assert first.startswith(table[name].summary.rstrip(".")), (name, first)


def test_the_sessions_help_imports_none_of_its_commands() -> None:
    done, imported = _imported("sessions", "--help")
    assert done.returncode == 0, done.stderr
    assert imported in ([], ["pydantic"]), imported  # typer >= 0.2x reads options with pydantic
    assert all(f"  {name} " in done.stdout for name in SESSIONS_COMMANDS), done.stdout


@pytest.mark.slow  # drives processes: left out of the everyday subset
def test_sessions_list_on_a_sqlite_file_loads_no_sqlalchemy(tmp_path: Path) -> None:
    """The first command people run reads a SQLite file at the newest schema with the
    standard library (#33: 1.4-2.0 s, now 0.4-0.6 s); elsewhere it opens the store."""
    url = f"sqlite:///{tmp_path / 'small.db'}"
    done, imported = _imported("migrate", "--url", url)
    assert done.returncode == 0, done.stderr
    done, imported = _imported("sessions", "list", "--url", url)
    assert done.returncode == 0, done.stderr
    assert "sqlalchemy" not in imported and "aiosqlite" not in imported, imported
    done, imported = _imported("sessions", "list", "--url", f"{url}?timeout=5")
    assert done.returncode == 0, done.stderr
    assert "sqlalchemy" in imported, imported


@pytest.mark.slow  # drives a process: left out of the everyday subset
def test_a_sqlite_command_never_loads_the_postgresql_driver(tmp_path: Path) -> None:
    """A command on a SQLite file runs without importing asyncpg (about 40 ms of start-up):
    each backend's runner, and the driver's error classes, load with the first use."""
    url = f"sqlite:///{tmp_path / 'small.db'}"
    done, imported = _imported("migrate", "--url", url)
    assert done.returncode == 0, done.stderr
    done, imported = _imported("sessions", "show", "none", "--url", url)
    assert done.returncode == 1, done.stderr  # no such session: read through the store
    assert "sqlalchemy" in imported and "asyncpg" not in imported, imported
