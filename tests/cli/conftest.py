"""Shared pieces of the command tests: seeded databases, a config file, and how to judge a run.

Every command runs in-process through typer's runner against the real databases of `db_url`
(a SQLite file and the machine's PostgreSQL).
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from typer.testing import CliRunner, Result

from sessionstore import SessionStore
from sessionstore.cli import app, compactctl_app
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.conftest import TABLES
from tests.support.histories import coding_session

SECRET = "api_key=sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3"
# The config file's extra redaction pattern; session 'other' says it.
EXTRA_PATTERN = "hello"
# What the config's callback exporter received (see `collected`).
EXPORTED: list[dict[str, Any]] = []

# No keyring from the surrounding environment (None removes a variable for the run).
NO_KEYS: Mapping[str, str | None] = {"SESSIONSTORE_KEYS": None, "SESSIONSTORE_KEY_FILE": None}

runner = CliRunner()


def run(*args: str, env: Mapping[str, str | None] | None = None) -> Result:
    """`sessionstore ARGS...` in-process."""
    return runner.invoke(app, list(args), env=env)


def run_compactctl(*args: str) -> Result:
    """`compactctl ARGS...` in-process."""
    return runner.invoke(compactctl_app, list(args))


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


@pytest.fixture
def collected() -> list[dict[str, Any]]:
    """Events the callback exporter received during this test."""
    EXPORTED.clear()
    return EXPORTED


@pytest.fixture
def seeded(db_url: str) -> str:
    """`db_url` holding session 'work' (compacted, with a secret) and session 'other'."""

    async def seed() -> None:
        async with SessionStore(db_url, create_tables=True) as store:
            manager = CompactionManager(
                CompactionConfig(storage=store, policy=CompactionPolicy(keep_recent_turns=2))
            )
            await manager.append("work", coding_session(8))
            await manager.compact("work")
            await store.append("work", [{"role": "user", "content": f"deploy with {SECRET}"}])
            await store.append("other", [{"role": "user", "content": EXTRA_PATTERN}])

    asyncio.run(seed())
    return db_url


@pytest.fixture
def uncompacted(db_url: str) -> str:
    """`db_url` holding session 'work': 12 coding steps, never compacted."""

    async def seed() -> None:
        async with SessionStore(db_url, create_tables=True) as store:
            await store.append("work", coding_session(12))

    asyncio.run(seed())
    return db_url


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[..., Path]:
    """Writes compact.yaml for a database: no exporters, one extra redaction pattern, plus
    whatever sections a test gives (they replace the defaults' sections)."""

    names = (f"compact-{n}.yaml" for n in itertools.count(1))

    def write(url: str, **sections: Any) -> Path:
        data = {
            "store": {"url": url},
            "telemetry": {"exporters": []},
            "redaction": {"extra_patterns": [EXTRA_PATTERN]},
            **sections,
        }
        path = tmp_path / next(names)
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        return path

    return write


@pytest.fixture
def config_file(seeded: str, write_config: Callable[..., Path]) -> Path:
    """A config file whose store.url is the seeded database."""
    return write_config(seeded)


@pytest.fixture
def bad_config(seeded: str, write_config: Callable[..., Path]) -> Path:
    """A config file for the seeded database with one invalid field."""
    return write_config(seeded, policy={"trigger_pct": 3})


BAD_CONFIG_PROBLEM = "policy.trigger_pct must be 0.0-1.0"
