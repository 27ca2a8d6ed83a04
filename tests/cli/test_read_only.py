"""Read commands read: on an immutable database file they work, on an old database they
refuse without migrating, and on a missing one they create nothing (see test_main.py)."""

from __future__ import annotations

import asyncio
import hashlib
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessionstore._storage._database import open_database
from sessionstore._storage._migrations import current_revision, downgrade
from sessionstore._storage._urls import resolve_url
from tests.support.cli import assert_refused, run, seed_work_session

READS = [
    "sessions list",
    "sessions show work",
    "sessions show work --no-redact",
    "sessions export work",
    "events --all",
    "query 'SELECT count(*) AS n FROM messages'",
    "query 'SELECT session_id FROM messages' --no-redact",
    "keys status",
    "retention policy list",
    "retention run --dry-run",
    "compact work --dry-run",
    "compact work --diff",
    "archive list",
    "archive show work",
    "archive show work --no-redact",
    "doctor",
]


def _immutable(path: Path, on: bool) -> None:
    subprocess.run(["chattr", "+i" if on else "-i", str(path)], check=True)


@pytest.fixture
def frozen(tmp_path: Path) -> Iterator[Path]:
    """The seeded SQLite file made immutable (not even root can write it), then thawed."""
    path = tmp_path / "frozen.db"
    seed_work_session(f"sqlite:///{path}")
    _immutable(path, True)
    try:
        yield path
    finally:
        _immutable(path, False)


@pytest.mark.parametrize("command", READS)
def test_read_commands_work_on_a_database_file_nobody_may_write(frozen: Path, command: str) -> None:
    before = hashlib.sha256(frozen.read_bytes()).hexdigest()
    result = run(*shlex.split(command), "--url", f"sqlite:///{frozen}")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and result.stdout.strip()
    if "--no-redact" in command:
        assert "audit event was not recorded" in result.output
    assert hashlib.sha256(frozen.read_bytes()).hexdigest() == before


@pytest.fixture
def old_database(fresh_db_url: str) -> str:
    """A database with the work session, downgraded to the first schema revision."""
    url = fresh_db_url
    seed_work_session(url)

    async def age() -> None:
        database = open_database(resolve_url(url))
        try:
            await downgrade(database, "0001")
        finally:
            await database.dispose()

    asyncio.run(age())
    return url


async def _revision(url: str) -> str | None:
    database = open_database(resolve_url(url))
    try:
        return await current_revision(database)
    finally:
        await database.dispose()


@pytest.mark.parametrize("command", [c for c in READS if c != "doctor"])
def test_read_commands_refuse_an_old_database_and_never_migrate_it(
    old_database: str, command: str
) -> None:
    result = run(*shlex.split(command), "--url", old_database)
    assert_refused(result, 2, "sessionstore migrate")
    assert asyncio.run(_revision(old_database)) == "0001"


def test_doctor_reports_an_old_database_without_migrating_it(old_database: str) -> None:
    result = run("doctor", "--url", old_database)
    assert (
        result.exit_code == 1
        and "needs" in result.output
        and "sessionstore migrate" in (result.output)
    )
    assert asyncio.run(_revision(old_database)) == "0001"


@pytest.mark.parametrize("name", ["h#sh.db", "q?x.db", "pct%41.db", "sp ace [1].db"])
@pytest.mark.parametrize("command", ["sessions list", "events --all", "sessions show work"])
def test_a_plain_path_with_url_characters_names_that_file(
    tmp_path: Path, name: str, command: str
) -> None:
    """`--url 'h#sh.db'` reads h#sh.db: its `#`, `?` and `%` are no fragment, query or
    escape, and a read creates no other file (beyond SQLite's own -wal and -shm)."""
    path = tmp_path / name
    seed_work_session(f"sqlite:///{str(path).replace('%', '%25').replace('?', '%3F')}")
    result = run(*shlex.split(command), "--url", str(path))
    assert result.exit_code == 0, result.output
    assert ("deploy with" if "show" in command else "work") in result.stdout
    files = {p.name.removesuffix("-wal").removesuffix("-shm") for p in tmp_path.iterdir()}
    assert files == {name}


@pytest.mark.parametrize("command", ["sessions list", "events --all", "sessions show work"])
def test_a_file_that_is_no_database_and_a_directory_are_named_so(
    tmp_path: Path, command: str
) -> None:
    text = tmp_path / "notes.db"
    text.write_text("hello, not a database\n" * 50)
    refused = run(*shlex.split(command), "--url", str(text))
    assert_refused(refused, 2, "is not a SQLite database", "check the path in --url")
    assert len(refused.stderr.strip().splitlines()) == 1
    assert text.read_text() == "hello, not a database\n" * 50
    directory = run(*shlex.split(command), "--url", str(tmp_path))
    assert_refused(directory, 2, "is a directory, not a SQLite file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]
