"""`sessionstore migrate`."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from .._errors import SchemaTooNewError
from .._storage._database import open_database
from .._storage._migrations import (
    QUERY_ROLE_NAME,
    create_query_role,
    current_revision,
    distribute_tables,
    upgrade,
)
from .._storage._revisions import head_revision, known_revisions
from .._storage._urls import resolve_url
from ._common import ConfigOption, UrlOption, console, shown_url, target_url
from ._text import shown


def migrate(
    url: UrlOption = None,
    config: ConfigOption = None,
    revision: Annotated[
        str, typer.Option(help="Target revision id, or 'head' for the newest.")
    ] = "head",
    query_role: Annotated[
        str | None,
        typer.Option(
            help="PostgreSQL: also create this role, allowed to SELECT the documented tables "
            "only, for `sessionstore query --role`.",
        ),
    ] = None,
    distribute: Annotated[
        bool,
        typer.Option(
            "--distribute",
            help="Citus: also distribute an existing database's tables by session_id, in the "
            "same step (a new database on a coordinator is distributed anyway); see "
            "docs/DEPLOYMENT.md.",
        ),
    ] = False,
) -> None:
    """Create or upgrade the sessionstore tables (Alembic) to REVISION (default: newest)."""
    url = target_url(url, config)
    if distribute and revision not in ("head", head_revision()):
        raise typer.BadParameter("distributing needs the newest schema", param_hint="--revision")
    if query_role is not None:
        if not QUERY_ROLE_NAME.match(query_role):
            raise typer.BadParameter(
                "a role name is lower-case letters, digits and _", param_hint="--query-role"
            )
        if resolve_url(url).get_backend_name() != "postgresql":
            raise typer.BadParameter("roles are PostgreSQL's", param_hint="--query-role")

    distributed = False

    async def run() -> tuple[str | None, str | None]:
        nonlocal distributed
        database = open_database(resolve_url(url))
        try:
            before = await current_revision(database)
            if before is not None and before not in known_revisions():
                raise SchemaTooNewError(
                    f"{shown_url(url)} is at schema revision {before!r}, newer than this "
                    f"sessionstore knows (newest {head_revision()!r}): it was migrated by a "
                    "newer release. Upgrade sessionstore (pip install -U sessionstore); "
                    "nothing was changed."
                )
            if distribute:
                distributed = await distribute_tables(database)
            else:
                await upgrade(database, revision)
            if query_role is not None:
                await create_query_role(database, query_role)
            return before, await current_revision(database)
        finally:
            await database.dispose()

    from alembic.util import CommandError  # Alembic loads only for this command

    try:
        before, after = asyncio.run(run())
    except CommandError as exc:  # an unknown revision: the upgrade's transaction changed nothing
        raise typer.BadParameter(
            f"{exc}; use 'head' or a revision id such as {head_revision()!r} (the newest)",
            param_hint="--revision",
        ) from None
    if before == after:
        console.print(
            shown(
                f"{shown_url(url)} is already at revision {after} (newest: {head_revision()})",
                "green",
            )
        )
    else:
        console.print(shown(f"{shown_url(url)}: migrated {before or 'empty'} -> {after}", "green"))
    if distributed:
        console.print(shown(f"{shown_url(url)}: tables distributed by session_id (Citus)", "green"))
    if query_role is not None:
        console.print(
            shown(f"role {query_role!r} may SELECT the sessionstore tables, nothing else")
        )
