"""`sessionstore migrate`."""

from __future__ import annotations

import asyncio

from ..database import open_database, resolve_url
from ..migrations import current_revision, head_revision, upgrade
from .common import ConfigOption, UrlOption, console, shown_url, target_url


def migrate(url: UrlOption = None, config: ConfigOption = None, revision: str = "head") -> None:
    """Create or upgrade the sessionstore tables (Alembic) to REVISION (default: newest)."""
    url = target_url(url, config)

    async def run() -> tuple[str | None, str | None]:
        database = open_database(resolve_url(url))
        try:
            before = await current_revision(database)
            await upgrade(database, revision)
            return before, await current_revision(database)
        finally:
            await database.dispose()

    before, after = asyncio.run(run())
    if before == after:
        console.print(
            f"[green]{shown_url(url)} is already at revision {after} (newest: {head_revision()})"
        )
    else:
        console.print(f"[green]{shown_url(url)}: migrated {before or 'empty'} -> {after}")
