"""`sessionstore migrate`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.engine import make_url

from sessionstore._storage._database import open_database
from sessionstore._storage._migrations import current_revision
from sessionstore._storage._revisions import head_revision
from sessionstore._storage._urls import resolve_url
from tests.support.cli import assert_refused, db_state, mentions, run


def _revision(url: str) -> str | None:
    async def read() -> str | None:
        database = open_database(resolve_url(url))
        try:
            return await current_revision(database)
        finally:
            await database.dispose()

    return asyncio.run(read())


def _database_name(url: str) -> str:
    """The database's name as the output shows it (a SQLite file's name)."""
    return Path(make_url(url).database or "").name


def test_migrate_creates_then_reports_up_to_date(db_url: str, tmp_path: Path) -> None:
    fresh = f"sqlite:///{tmp_path / 'm.db'}" if db_url.startswith("sqlite") else db_url
    first = run("migrate", "--url", fresh)
    assert first.exit_code == 0, first.output
    again = run("migrate", "--url", fresh)
    assert again.exit_code == 0
    assert f"already at revision {head_revision()}" in again.output


def test_an_unknown_revision_is_refused_and_changes_nothing(seeded: str) -> None:
    before = db_state(seeded)
    result = run("migrate", "--url", seeded, "--revision", "zzz")
    assert_refused(result, 2, "--revision", "Can't locate revision identified by 'zzz'", "head")
    assert _revision(seeded) == head_revision()
    assert db_state(seeded) == before


def test_an_unknown_revision_leaves_a_fresh_database_unmigrated(tmp_path: Path) -> None:
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert_refused(run("migrate", "--url", fresh, "--revision", "zzz"), 2, "'zzz'")
    assert _revision(fresh) is None


def test_the_config_file_names_the_database(
    db_url: str, tmp_path: Path, write_config: Callable[..., Path]
) -> None:
    fresh = f"sqlite:///{tmp_path / 'from-config.db'}" if db_url.startswith("sqlite") else db_url
    result = run("migrate", "--config", str(write_config(fresh)))
    assert result.exit_code == 0, result.output
    assert mentions(result, _database_name(fresh))
    assert _revision(fresh) == head_revision()


def test_url_beats_the_config_files_database(
    seeded: str, tmp_path: Path, write_config: Callable[..., Path]
) -> None:
    elsewhere = tmp_path / "never.db"
    config = write_config(f"sqlite:///{elsewhere}")
    result = run("migrate", "--config", str(config), "--url", seeded)
    assert result.exit_code == 0 and "already at revision" in result.output
    assert mentions(result, _database_name(seeded))
    assert not elsewhere.exists()
