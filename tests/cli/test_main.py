"""The `sessionstore` entry point: help, the installed module, and how errors become exit codes."""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from sessionstore import SessionStore
from sessionstore._storage._database import open_database
from sessionstore._storage._urls import resolve_url
from tests.support.cli import (
    assert_refused,
    db_state,
    run,
    run_compactctl,
    run_process,
    seed_work_session,
)


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
    # The example of a good URL is shown whole, not with a redacted placeholder in it.
    assert "postgresql+asyncpg://user@host:5432/dbname" in result.output
    assert "REDACTED" not in result.output


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


def test_an_unreachable_database_is_one_message_and_exit_1() -> None:
    result = run("sessions", "list", "--url", "postgresql://postgres@127.0.0.1:1/x")
    assert_refused(result, 1, "database unavailable:", "connection refused", "sessionstore doctor")
    assert "cannot be reached" in result.output and "became unavailable" not in result.output


READ_COMMANDS = [
    "sessions list",
    "sessions show s",
    "sessions export s",
    "events",
    "query 'SELECT 1'",
    "keys status",
    "retention policy list",
    "retention run --dry-run",
    "compact s --dry-run",
    "compact s --diff",
    "archive list",
    "archive show s",
]


@pytest.mark.parametrize("command", READ_COMMANDS)
def test_a_mistyped_sqlite_path_is_exit_2_and_creates_nothing(tmp_path: Path, command: str) -> None:
    typo = tmp_path / "typo" / "sesions.db"
    result = run(*shlex.split(command), "--url", f"sqlite:///{typo}")
    assert_refused(result, 2, f"no SQLite database at {typo}", "sessionstore migrate")
    assert not typo.exists() and not typo.parent.exists()
    assert len(result.output.strip().splitlines()) == 1


def test_version_and_short_help() -> None:
    version = run("--version")
    assert version.exit_code == 0 and version.output.startswith("sessionstore ")
    short = run("sessions", "show", "-h")
    assert short.exit_code == 0 and "--tail" in short.output
    assert "<bool>" not in short.output


def test_a_two_slash_sqlite_url_is_explained_in_one_line(tmp_path: Path) -> None:
    result = run("sessions", "list", "--url", "sqlite://x.db")
    assert_refused(result, 2, "sqlite:///x.db", "three slashes")
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.slow  # drives a process: left out of the everyday subset
def test_piped_output_is_neither_wrapped_nor_coloured(seeded: str, tmp_path: Path) -> None:
    long_id = "session-" + "x" * 150
    asyncio.run(_append(seeded, long_id))
    listed = run_process("sessions", "list", "--url", seeded, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert any(long_id in line for line in listed.stdout.splitlines())
    assert "\x1b[" not in listed.stdout
    events = run_process("events", "--url", seeded, "--all", cwd=tmp_path)
    lines = events.stdout.splitlines()
    assert lines and all(line.split()[0].isdigit() for line in lines)  # one event per line


@pytest.mark.slow  # drives a process: left out of the everyday subset
def test_a_closed_pipe_ends_quietly(seeded: str, tmp_path: Path) -> None:
    asyncio.run(_append(seeded, "many", count=3_000))
    shell = (
        f"{shlex.quote(sys.executable)} -m sessionstore.cli sessions show many --history "
        f"--url {shlex.quote(seeded)} | head -1"
    )
    completed = _pipeline(shell, tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == "" and len(completed.stdout.splitlines()) == 1


def test_a_closed_pipe_or_a_full_disk_during_a_line_by_line_listing(
    sqlite_url: str, tmp_path: Path
) -> None:
    """`verify` prints a line per session as it goes: rich's own broken-pipe exit 1 must
    not leak out, and a full disk is the output's failure, not the database's."""

    async def many() -> None:
        async with SessionStore(sqlite_url, create_tables=True) as store:
            for n in range(1_500):
                await store.append(f"s{n}", [{"role": "user", "content": "x"}])

    asyncio.run(many())
    command = f"{shlex.quote(sys.executable)} -m sessionstore.cli verify --url {sqlite_url}"
    for shell, code, stderr in (
        (f"{command} | head -1", 0, ""),
        (f"{command} > /dev/full", 1, "error: cannot write the output: No space left on device\n"),
    ):
        completed = _pipeline(shell, tmp_path)
        assert (completed.returncode, completed.stderr) == (code, stderr), shell


def _pipeline(shell: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A shell pipeline run as a user would (bash, pipefail: the first command's exit counts)."""
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", shell],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


async def _append(url: str, session_id: str, count: int = 1) -> None:
    async with SessionStore(url) as store:
        items = [{"role": "user", "content": f"line {n}"} for n in range(count)]
        await store.append(session_id, items)


def test_migrate_and_doctor_tell_a_newer_database_to_upgrade_sessionstore(
    fresh_db_url: str,
) -> None:
    seed_work_session(fresh_db_url)
    asyncio.run(_stamp(fresh_db_url, "f00d_future"))
    migrate = run("migrate", "--url", fresh_db_url)
    assert_refused(migrate, 2, "Upgrade sessionstore", "f00d_future")
    assert "--revision" not in migrate.output
    doctor = run("doctor", "--url", fresh_db_url)
    assert doctor.exit_code == 1 and "upgrade sessionstore" in doctor.output
    assert "run `sessionstore migrate`" not in doctor.output


async def _stamp(url: str, revision: str) -> None:
    """Set the revision below the store (a store would refuse the future one)."""
    database = open_database(resolve_url(url))
    try:
        await database.write(
            lambda conn: conn.execute(
                sa.text("UPDATE alembic_version SET version_num = :r"), {"r": revision}
            )
        )
    finally:
        await database.dispose()
