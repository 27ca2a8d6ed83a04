"""Shared CLI pieces: consoles, the --url option, exit codes."""

from __future__ import annotations

from typing import Annotated, Final

import typer
from rich.console import Console

from ..database import resolve_url

console = Console()
err_console = Console(stderr=True)

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1  # the command ran and found a problem (e.g. a check failed)
EXIT_USAGE: Final = 2  # bad arguments or configuration: nothing was done

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="SESSIONSTORE_URL",
        help="Database URL (default: sqlite:///sessionstore.db in the working directory).",
    ),
]


def shown_url(url: str | None) -> str:
    """The URL as it may be printed (password masked)."""
    return resolve_url(url).render_as_string(hide_password=True)
