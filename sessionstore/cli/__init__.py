"""The `sessionstore` command line (and `compactctl`, its compaction commands)."""

from __future__ import annotations

from importlib.metadata import version as package_version
from typing import Annotated

import typer

from ._archive import archive_app
from ._common import CLI_SETTINGS, GuardedCommand, GuardedGroup
from ._compact import compact
from ._demo import demo
from ._doctor import doctor
from ._events import events
from ._import import import_sessions
from ._keys import keys_app
from ._migrate import migrate
from ._query import query
from ._retention import retention_app
from ._schema import schema
from ._search import search
from ._serve import serve
from ._sessions_bulk import sessions_app  # with export/delete of many and import
from ._usage import usage
from ._verify import verify

app = typer.Typer(
    help="sessionstore: SQL session memory for LLM agents, with automatic compaction.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion
    cls=GuardedGroup,
    **CLI_SETTINGS,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sessionstore {package_version('sessionstore')}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """sessionstore: SQL session memory for LLM agents, with automatic compaction."""


app.command()(migrate)
app.command()(demo)
app.command()(compact)
app.add_typer(retention_app, name="retention")
app.add_typer(archive_app, name="archive")
app.add_typer(keys_app, name="keys")
app.add_typer(sessions_app, name="sessions")
app.command()(events)
app.command()(query)
app.command()(search)
app.command()(usage)
app.command()(schema)
app.command()(doctor)
app.command()(verify)
app.command(name="import")(import_sessions)
app.command()(serve)

compactctl_app = typer.Typer(
    help="compactctl: dry-run, diff and run compactions of sessionstore sessions.",
    add_completion=False,
    **CLI_SETTINGS,
)
compactctl_app.command(cls=GuardedCommand)(compact)


def main() -> None:
    """Entry point of `sessionstore`."""
    app()


def compactctl() -> None:
    """Entry point of `compactctl`."""
    compactctl_app()
