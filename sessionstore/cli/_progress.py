"""The progress bar of long commands (import, retention, bulk compaction, export, delete).

Shown on stderr, and only when both stdout and stderr are terminals: a piped or redirected
run (`... | jq`, `2> log`, cron) gets its output and nothing else, no bar and no spinner,
whatever rich would guess from $FORCE_COLOR or $TTY_COMPATIBLE. It disappears when done.
"""

from __future__ import annotations

import sys

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ._common import err_console


def on_terminal() -> bool:
    """Whether a person is watching: stdout and stderr both terminals."""
    return sys.stdout.isatty() and sys.stderr.isatty()


def progress_bar(*, quiet: bool = False) -> Progress:
    """A bar (description, bar, done/total, elapsed) on stderr; disabled (draws nothing)
    when `quiet` (e.g. --json) or when not on a terminal. Use it as a context manager."""
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=quiet or not on_terminal(),
    )
