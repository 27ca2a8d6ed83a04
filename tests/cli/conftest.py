"""Fixtures of the command tests: seeded databases, config files (helpers: support/cli.py)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from sessionstore import SessionStore
from tests.support.cli import EXPORTED, EXTRA_PATTERN, seed_work_session
from tests.support.histories import coding_session


@pytest.fixture
def collected() -> list[dict[str, Any]]:
    """Events the callback exporter received during this test."""
    EXPORTED.clear()
    return EXPORTED


@pytest.fixture
def seeded(db_url: str) -> str:
    """`db_url` holding session 'work' (compacted, with a secret) and session 'other'."""
    seed_work_session(db_url)
    return db_url


@pytest.fixture
def sqlite_seeded(tmp_path: Path) -> str:
    """The seeded sessions in a SQLite file (for what only SQLite has, such as PRAGMAs)."""
    url = f"sqlite:///{tmp_path / 'seeded.db'}"
    seed_work_session(url)
    return url


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
