"""`sessionstore migrate`."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from alembic.util import CommandError

from ..database import open_database, resolve_url
from ..migrations import current_revision, head_revision, upgrade
from .common import ConfigOption, UrlOption, console, shown_url, target_url


def migrate(
    url: UrlOption = None,
    config: ConfigOption = None,
    revision: Annotated[
        str, typer.Option(help="Target revision id, or 'head' for the newest.")
    ] = "head",
) -> None:
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

    try:
        before, after = asyncio.run(run())
    except CommandError as exc:  # an unknown revision: the upgrade's transaction changed nothing
        raise typer.BadParameter(
            f"{exc}; use 'head' or a revision id such as {head_revision()!r} (the newest)",
            param_hint="--revision",
        ) from None
    if before == after:
        console.print(
            f"[green]{shown_url(url)} is already at revision {after} (newest: {head_revision()})"
        )
    else:
        console.print(f"[green]{shown_url(url)}: migrated {before or 'empty'} -> {after}")
