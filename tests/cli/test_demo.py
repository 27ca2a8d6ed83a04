"""`sessionstore demo`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sessionstore import SessionStore
from tests.support.cli import NO_KEYS, assert_refused, db_state, run


@pytest.mark.slow  # drives a process: left out of the everyday subset
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
        ("--factor", "1000000", "'--factor': Input should be less than or equal to 10"),
        ("--window", "99999999999999999999999", "'--window'"),
    ],
)
def test_bad_sizes_are_refused_before_anything_runs(
    db_url: str, option: str, value: str, problem: str
) -> None:
    before = db_state(db_url)
    assert_refused(run("demo", "--url", db_url, option, value), 2, problem)
    assert db_state(db_url) == before


def test_the_demo_writes_its_own_file_not_the_users_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    users = tmp_path / "users.db"
    monkeypatch.chdir(tmp_path)
    result = run(
        "demo", "--window", "8000", "--factor", "1", env={"SESSIONSTORE_URL": f"sqlite:///{users}"}
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "sessionstore-demo.db").exists() and not users.exists()
    assert (
        "sessionstore sessions show --url sqlite:///sessionstore-demo.db -- demo" in result.output
    )
    assert "long session: 100%" in result.output  # progress, as lines on a pipe


@pytest.mark.slow  # drives a process: left out of the everyday subset
def test_the_demo_refuses_sessions_it_did_not_create(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mine.db'}"
    asyncio.run(_append(url, "demo", "my own conversation"))
    before = db_state(url)
    result = run("demo", "--url", url, "--window", "8000", "--factor", "1")
    assert_refused(result, 2, "'demo'", "did not create", "--url")
    assert len(result.output.strip().splitlines()) == 1
    assert db_state(url) == before
    again = run("demo", "--url", f"sqlite:///{tmp_path / 'demo.db'}", "--window", "8000")
    assert again.exit_code == 0, again.output
    twice = run("demo", "--url", f"sqlite:///{tmp_path / 'demo.db'}", "--window", "8000")
    assert twice.exit_code == 0, twice.output  # its own sessions it may reuse


def test_without_a_key_the_demo_says_archives_are_unencrypted(db_url: str) -> None:
    result = run("demo", "--url", db_url, "--window", "8000", "--factor", "1", env=NO_KEYS)
    assert result.exit_code == 0, result.output
    assert "stored unencrypted" in result.output and "sessionstore keys generate" in result.output
    assert "sessionstore serve --url" in result.output  # the viewer, among what to try next


def test_the_demo_takes_a_plain_file_path_like_every_command(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"
    result = run("demo", "--url", str(path), "--window", "8000", "--factor", "1")
    assert result.exit_code == 0, result.output
    assert path.exists()
    assert f"--url sqlite:///{path}" in result.output  # the hints name the file it wrote


async def _append(url: str, session_id: str, text: str) -> None:
    async with SessionStore(url) as store:
        await store.append(session_id, [{"role": "user", "content": text}])
