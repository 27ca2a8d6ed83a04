"""The `sessionstore` command line (and `compactctl`, its compaction commands)."""

from __future__ import annotations

import typer

from .archive import archive_app
from .common import GuardedCommand, GuardedGroup
from .compact import compact
from .demo import demo
from .doctor import doctor
from .events import events
from .import_ import import_sessions
from .keys import keys_app
from .migrate import migrate
from .query import query
from .retention import retention_app
from .sessions import sessions_app

app = typer.Typer(
    help="sessionstore: SQL session memory for LLM agents, with automatic compaction.",
    no_args_is_help=True,
    add_completion=False,
    cls=GuardedGroup,
)
app.command()(migrate)
app.command()(demo)
app.command()(compact)
app.add_typer(retention_app, name="retention")
app.add_typer(archive_app, name="archive")
app.add_typer(keys_app, name="keys")
app.add_typer(sessions_app, name="sessions")
app.command()(events)
app.command()(query)
app.command()(doctor)
app.command(name="import")(import_sessions)

compactctl_app = typer.Typer(
    help="compactctl: dry-run, diff and run compactions of sessionstore sessions.",
    add_completion=False,
)
compactctl_app.command(cls=GuardedCommand)(compact)


def main() -> None:
    """Entry point of `sessionstore`."""
    app()


def compactctl() -> None:
    """Entry point of `compactctl`."""
    compactctl_app()
