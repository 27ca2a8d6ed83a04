"""`sessionstore demo`: the drop-in (restart, identical reload), then a 3-window session.

The demo writes to its own file (`sessionstore-demo.db`) unless `--url` names another
database, never follows $SESSIONSTORE_URL, and refuses to touch sessions it did not make.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Final

import typer
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn
from rich.table import Table

from .._commands import cli_command
from .._errors import KeyringError
from .._storage._urls import resolve_url
from ._common import console, err_console, shown_url, url_or_path
from ._exit_codes import EXIT_FAILED
from ._text import shown

if TYPE_CHECKING:
    from ._demo_scenario import DemoResult, LongSessionReport

# At 2,000 the scripted long session cannot fit one tool pair plus a summary (InsufficientBudget);
# 4,000 leaves a margin, so a too-small --window is a usage error, not a failed run.
MIN_DEMO_WINDOW: Final = 4_000
MAX_DEMO_WINDOW: Final = 2_000_000  # the largest windows models offer; more would run for hours
MAX_DEMO_FACTOR: Final = 10


def demo(
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            callback=url_or_path,
            help="Database URL or SQLite file path to write the demo's sessions to (default: "
            "./sessionstore-demo.db; $SESSIONSTORE_URL is deliberately ignored).",
        ),
    ] = None,
    window: Annotated[
        int,
        typer.Option(
            min=MIN_DEMO_WINDOW,
            max=MAX_DEMO_WINDOW,
            help="Context window of the long session (4,000-2,000,000 tokens).",
        ),
    ] = 128_000,
    factor: Annotated[
        int,
        typer.Option(min=1, max=MAX_DEMO_FACTOR, help="Windows' worth of traffic (1-10)."),
    ] = 3,
) -> None:
    """Run a scripted agent session, restart the store, then a long session through compaction."""
    try:  # the demo runs an Agents SDK agent; no other command needs the SDK
        from ._demo_scenario import DEMO_URL, foreign_sessions, run_demo, run_long_session
    except ImportError as missing:
        raise typer.BadParameter(
            f"the demo runs an OpenAI Agents SDK agent, and {missing.name} is not installed: "
            "pip install 'sessionstore[agents]'",
            param_hint="demo",
        ) from None
    target = url or DEMO_URL
    resolve_url(target)  # a bad URL is a usage error before anything runs
    taken = asyncio.run(foreign_sessions(target))
    if taken:
        raise typer.BadParameter(
            f"{shown_url(target)} already has session(s) {', '.join(map(repr, taken))} that the "
            "demo did not create; it will not touch them. Run it on another database "
            "(--url sqlite:///another-demo.db)",
            param_hint="--url",
        )
    result = asyncio.run(run_demo(target))
    console.print(shown(f"== sessionstore demo on {shown_url(target)}", "bold"))
    ok = _print_restart(result)
    console.print(
        shown(
            f"== A long session: {factor} x a {window:,}-token window, compacted as it goes",
            "bold",
        )
    )
    with _progress(factor * window) as advance:
        report = asyncio.run(
            run_long_session(target, window=window, factor=factor, progress=advance)
        )
    ok = _print_long(report) and ok
    _print_next(target)
    if not ok:
        raise typer.Exit(code=EXIT_FAILED)


@contextmanager
def _progress(total: int) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on a terminal; on a pipe, a line at each quarter of the way."""
    if console.is_terminal:
        with Progress(
            TextColumn("long session"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.completed:,.0f} of {task.total:,.0f} tokens"),
            console=console,
            transient=True,
        ) as bar:
            task = bar.add_task("long session", total=total)
            yield lambda done, _total: bar.update(task, completed=min(done, total))
        return
    reported = [0]

    def line(done: int, target: int) -> None:
        quarter = min(4, done * 4 // max(target, 1))
        if quarter > reported[0]:
            reported[0] = quarter
            err_console.print(shown(f"long session: {quarter * 25}% ({done:,} tokens)"))

    yield line


def _print_restart(result: DemoResult) -> bool:
    for answer in result.answers:
        console.print(shown("assistant: ", "cyan") + shown(answer))
    table = Table(title="Rows of the active context (messages table)")
    for column in ("seq", "kind", "role", "item_type", "tool_name", "tokens"):
        table.add_column(column, justify="right" if column in ("seq", "tokens") else "left")
    for row in result.rows:
        table.add_row(
            shown(row.seq),
            shown(row.kind),
            shown(row.role or ""),
            shown(row.item_type or ""),
            shown(row.tool_name or ""),
            shown(row.tokens),
        )
    console.print(table)
    same = result.context_after_restart == result.context_before_restart
    console.print(
        shown(
            f"Restarted the store: reloaded {len(result.context_after_restart)} items, "
            f"identical: {'yes' if same else 'NO'}; token total before "
            f"{result.tokens_before_restart}, after {result.tokens_after_restart}."
        )
    )
    from ._demo_scenario import DEMO_SESSION, TOOLS_QUERY

    console.print(shown(f"SQL over the history: which tools did '{DEMO_SESSION}' call?"))
    console.print(shown(TOOLS_QUERY.strip(), "dim"))
    for name, calls in result.tool_calls:
        console.print(shown(f"  {name}: {calls} call(s)"))
    return same and result.tokens_before_restart == result.tokens_after_restart


def _print_long(report: LongSessionReport) -> bool:
    table = Table(title="Compactions (compactions table)")
    for column in ("v", "trigger", "tokens before", "tokens after", "cut", "summary tokens", "ms"):
        table.add_column(column, justify="left" if column == "trigger" else "right")
    for row in report.compactions:
        cut = 1 - row.tokens_after / row.tokens_before if row.tokens_before else 0.0
        table.add_row(
            shown(row.version),
            shown(row.trigger),
            shown(f"{row.tokens_before:,}"),
            shown(f"{row.tokens_after:,}"),
            shown(f"{cut:.0%}"),
            shown(row.summary_tokens or "-"),
            shown(f"{row.duration_ms or 0:.0f}"),
        )
    console.print(table)
    fits = report.largest_model_input <= report.window
    console.print(
        shown(
            f"{report.turns} turns, {report.traffic_tokens:,} tokens of traffic "
            f"({report.traffic_tokens / report.window:.1f} windows); largest model input "
            f"{report.largest_model_input:,} tokens (window {report.window:,}): "
            f"{'never overflowed' if fits else 'OVERFLOWED'}."
        )
    )
    console.print(
        shown(
            f"Active context now: {report.final_context_items} items, "
            f"{report.final_context_tokens:,} tokens. The current summary begins:"
        )
    )
    console.print(shown(report.summary_preview, "dim"))
    return fits and len(report.compactions) >= 1


def _print_next(target: str) -> None:
    """Where to look next, and whether archives were encrypted."""
    from .._security._crypto import Keyring

    url = shlex.quote(target)
    console.print(shown("== Next, try:", "bold"))
    for command in (
        cli_command("sessions show", "demo", options=f"--url {url}"),
        cli_command("events", options=f"--url {url}"),
        cli_command("compact", "demo-long", options=f"--diff --url {url}"),
        cli_command("archive list", options=f"--url {url}"),
        cli_command(
            "query", "SELECT kind, count(*) FROM messages GROUP BY kind", options=f"--url {url}"
        ),
        cli_command("serve", options=f"--url {url}") + "   # the web viewer (the [web] extra)",
    ):
        console.print(shown(f"  {command}"))
    try:
        keyring = Keyring.load()
    except KeyringError:
        keyring = None
    if keyring is None:
        console.print(
            shown(
                "Note: no key is configured, so the archives of replaced originals are stored "
                "unencrypted. `sessionstore keys generate` makes one (docs/SECURITY.md).",
                "yellow",
            )
        )
