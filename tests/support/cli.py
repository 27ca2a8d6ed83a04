"""How the command tests run a command and judge it: in-process through typer's runner,
against the real databases (a SQLite file and the machine's PostgreSQL)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from typer.testing import CliRunner, Result

from sessionstore import SessionStore
from sessionstore.cli import app, compactctl_app
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.database import TABLES
from tests.support.histories import coding_session

SECRET = "api_key=sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3"
# The config file's extra redaction pattern; session 'other' says it.
EXTRA_PATTERN = "hello"
# What the config's callback exporter received (see `collected`).
EXPORTED: list[dict[str, Any]] = []

# No keyring from the surrounding environment (None removes a variable for the run).
NO_KEYS: Mapping[str, str | None] = {"SESSIONSTORE_KEYS": None, "SESSIONSTORE_KEY_FILE": None}

runner = CliRunner()


def run(
    *args: str, env: Mapping[str, str | None] | None = None, input: str | None = None
) -> Result:
    """`sessionstore ARGS...` in-process (`input` is what the user types)."""
    return runner.invoke(app, list(args), env=env, input=input)


def run_process(
    *args: str, cwd: Path, timeout: float = 60, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed command in a real process, output to a pipe, the default database
    being the one in `cwd` ($SESSIONSTORE_URL unset); `env` adds variables."""
    env = {
        **{name: value for name, value in os.environ.items() if name != "SESSIONSTORE_URL"},
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "sessionstore.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def run_compactctl(*args: str) -> Result:
    """`compactctl ARGS...` in-process."""
    return runner.invoke(compactctl_app(), list(args))


def _squeezed(text: str) -> str:
    return re.sub(r"[\s│╭╮╰╯─]", "", text)


def mentions(result: Result, phrase: str) -> bool:
    """Whether the output says `phrase`, wherever rich wrapped it (even inside a long path)
    or boxed it (usage errors)."""
    return _squeezed(phrase) in _squeezed(result.output)


def assert_refused(result: Result, code: int, *phrases: str) -> None:
    """A refusal: the documented exit code, each phrase in the message, and no traceback."""
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    for phrase in phrases:
        assert mentions(result, phrase), f"{phrase!r} not in:\n{result.output}"


def db_state(url: str) -> dict[str, int]:
    """Rows per table: equal before and after a refused command means nothing changed."""

    async def count() -> dict[str, int]:
        async with SessionStore(url, create_tables=True) as store, store.engine.connect() as conn:
            return {
                table: int(
                    (await conn.execute(sa.text(f"SELECT count(*) FROM {table}"))).scalar_one()
                )
                for table in TABLES
            }

    return asyncio.run(count())


def collect(event: dict[str, Any]) -> None:
    """The `telemetry.callback` of the config tests."""
    EXPORTED.append(event)


BAD_CONFIG_PROBLEM = "policy.trigger_pct must be 0.0-1.0"


def seed_work_session(url: str) -> None:
    """Session 'work' (compacted, then a message with a secret) and session 'other'."""

    async def seed() -> None:
        async with SessionStore(url, create_tables=True) as store:
            manager = CompactionManager(
                CompactionConfig(store=store, policy=CompactionPolicy(keep_recent_turns=2))
            )
            await manager.append("work", coding_session(8))
            await manager.compact("work")
            await store.append("work", [{"role": "user", "content": f"deploy with {SECRET}"}])
            await store.append("other", [{"role": "user", "content": EXTRA_PATTERN}])

    asyncio.run(seed())
