"""The progress bar of long commands: drawn when stdout and stderr are a terminal (a real
pseudo-terminal here), and nothing at all (no bar, no spinner, no cursor codes) when either
is a pipe, even when the environment tells rich to pretend otherwise."""

from __future__ import annotations

import asyncio
import errno
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest
from agents import SQLiteSession

from sessionstore import SessionStore
from tests.support.histories import coding_session

BAR = "━"  # rich's bar (a finished or pulsing bar draws it too)
# What any live display writes: the bar, spinner frames, cursor hiding and moving.
LIVE_MARKS = ("━", "╸", "╺", "⠋", "⠙", "⠹", "\x1b[?25l", "\x1b[1A", "\x1b[2K")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SESSIONSTORE_URL", "NO_COLOR")}
    env.update(TERM="xterm-256color", COLUMNS="120", LINES="40", **extra)
    return env


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "sessionstore.cli", *args]


def on_terminal(*args: str, stdout_tty: bool = True) -> tuple[int, str, str]:
    """Run with stderr (and stdout, unless `stdout_tty` is False) on a pseudo-terminal:
    (exit code, what the terminal showed, what the stdout pipe got)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        _command(*args),
        stdin=subprocess.DEVNULL,
        stdout=slave if stdout_tty else subprocess.PIPE,
        stderr=slave,
        env=_env(),
    )
    os.close(slave)
    shown = bytearray()
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        assert ready, "the command did not finish"
        try:
            chunk = os.read(master, 65536)
        except OSError as error:  # EIO: the other side closed
            if error.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        shown += chunk
    piped = proc.stdout.read().decode() if proc.stdout is not None else ""
    os.close(master)
    return proc.wait(60), shown.decode("utf-8", "replace"), piped


def piped(*args: str) -> subprocess.CompletedProcess[str]:
    """Run with stdout and stderr on pipes, rich told to treat them as terminals."""
    return subprocess.run(
        _command(*args),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=_env(FORCE_COLOR="1", TTY_COMPATIBLE="1"),
        timeout=120,
    )


@pytest.fixture
def store_file(tmp_path: Path) -> str:
    """A SQLite file with two compactable sessions and an old-enough retention policy."""
    url = f"sqlite:///{tmp_path / 'store.db'}"

    async def seed() -> None:
        async with SessionStore(url, create_tables=True) as store:
            for session_id in ("a", "b"):
                await store.append(session_id, coding_session(12, seed=len(session_id)))

    asyncio.run(seed())
    return url


def _sdk_file(tmp_path: Path) -> Path:
    path = tmp_path / "conversations.db"

    async def write() -> None:
        sdk = SQLiteSession("alice", path)
        await sdk.add_items([{"role": "user", "content": f"message {n}"} for n in range(5)])
        sdk.close()

    asyncio.run(write())
    return path


def _export_file(url: str, tmp_path: Path) -> Path:
    out = tmp_path / "all.jsonl"
    done = piped("sessions", "export", "--all", "--output", str(out), "--url", url)
    assert done.returncode == 0, done.stderr
    return out


LONG_COMMANDS = (
    "compact --all",
    "compact a b",
    "sessions export",
    "sessions import",
    "import",
    "retention run",
)


def _prepared(name: str, url: str, tmp: Path) -> list[str]:
    """The command line of `name`, with what it needs made first."""
    if name == "compact --all":
        return ["compact", "--all", "--url", url]
    if name == "compact a b":
        return ["compact", "a", "b", "--url", url]
    if name == "sessions export":
        return ["sessions", "export", "--all", "--url", url, "--output", str(tmp / "out.jsonl")]
    if name == "sessions import":
        fresh = f"sqlite:///{tmp / 'fresh.db'}"
        return ["sessions", "import", str(_export_file(url, tmp)), "--url", fresh]
    if name == "import":
        return ["import", str(_sdk_file(tmp)), "--url", url]
    _policy(url)
    return ["retention", "run", "--url", url]


@pytest.mark.parametrize("name", LONG_COMMANDS)
def test_no_bar_when_piped(name: str, store_file: str, tmp_path: Path) -> None:
    done = piped(*_prepared(name, store_file, tmp_path))
    assert done.returncode == 0, done.stderr
    for mark in LIVE_MARKS:
        assert mark not in done.stdout and mark not in done.stderr, (mark, done.stderr)


@pytest.mark.parametrize("name", LONG_COMMANDS)
def test_a_bar_on_a_terminal(name: str, store_file: str, tmp_path: Path) -> None:
    code, shown, _ = on_terminal(*_prepared(name, store_file, tmp_path))
    assert code == 0, shown
    assert BAR in shown, shown


def test_no_bar_when_only_stdout_is_piped(store_file: str) -> None:
    code, shown, out = on_terminal("compact", "--all", "--url", store_file, stdout_tty=False)
    assert code == 0, shown
    assert BAR not in shown and BAR not in out and "\x1b[?25l" not in shown
    assert "== a" in out and "== b" in out


def _policy(url: str) -> None:
    """A retention policy, so `retention run` has something to walk through."""
    done = piped(
        "retention",
        "policy",
        "set",
        "old",
        "--action",
        "delete_events",
        "--days",
        "1",
        "--url",
        url,
    )
    assert done.returncode == 0, done.stderr
