"""`sessionstore sessions`: a group whose commands load when the command line names one
(`_lazy.SESSIONS_COMMANDS`), as the root's do, so `sessions list` loads no more than it uses."""

from __future__ import annotations

import typer

from ._guard import CLI_SETTINGS
from ._lazy import SessionsGroup

sessions_app = typer.Typer(cls=SessionsGroup, add_completion=False, **CLI_SETTINGS)


@sessions_app.callback()
def _sessions() -> None:
    """List, show, export, import and delete sessions."""
