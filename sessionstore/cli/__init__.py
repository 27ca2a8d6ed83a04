"""The `sessionstore` command line (and `compactctl`, its compaction commands).

The root imports none of its commands: each is loaded when the command line names it
(`_lazy.COMMANDS` says where each lives), so start-up pays only for what runs.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ._guard import CLI_SETTINGS, GuardedCommand
from ._lazy import RootGroup

app = typer.Typer(
    help="sessionstore: SQL session memory for LLM agents, with automatic compaction.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion
    cls=RootGroup,
    **CLI_SETTINGS,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version as package_version  # 25 ms: only for --version

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


def compactctl_app() -> typer.Typer:
    """`compactctl`: `sessionstore compact` as a command of its own."""
    from ._compact import compact

    single = typer.Typer(
        help="compactctl: dry-run, diff and run compactions of sessionstore sessions.",
        add_completion=False,
        **CLI_SETTINGS,
    )
    single.command(cls=GuardedCommand)(compact)
    return single


def main() -> None:
    """Entry point of `sessionstore`."""
    app()


def compactctl() -> None:
    """Entry point of `compactctl`."""
    compactctl_app()()
