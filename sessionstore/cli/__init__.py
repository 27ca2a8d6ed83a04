"""The `sessionstore` command line (and `compactctl`, its compaction commands)."""

from __future__ import annotations

import typer

from ..compaction.errors import CompactError
from ..errors import SessionStoreError
from .archive import archive_app
from .common import EXIT_FAILED, EXIT_USAGE, err_console
from .compact import compact
from .demo import demo
from .doctor import doctor
from .events import events
from .keys import keys_app
from .migrate import migrate
from .query import query
from .retention import retention_app
from .sessions import sessions_app

app = typer.Typer(
    help="sessionstore: SQL session memory for LLM agents, with automatic compaction.",
    no_args_is_help=True,
    add_completion=False,
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

compactctl_app = typer.Typer(
    help="compactctl: dry-run, diff and run compactions of sessionstore sessions.",
    add_completion=False,
)
compactctl_app.command()(compact)


def _guarded(application: typer.Typer) -> None:
    """User errors print one clear line and a dependable exit code, not a traceback."""
    try:
        application()
    except CompactError as exc:
        err_console.print(f"[red]compaction failed:[/] {exc}")
        raise SystemExit(EXIT_FAILED) from None
    except SessionStoreError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise SystemExit(EXIT_USAGE) from None


def main() -> None:
    """Entry point of `sessionstore`."""
    _guarded(app)


def compactctl() -> None:
    """Entry point of `compactctl`."""
    _guarded(compactctl_app)
