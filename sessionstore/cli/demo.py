"""`sessionstore demo`: the drop-in (restart, identical reload), then a 3-window session."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated, Final

import typer
from rich.table import Table
from rich.text import Text

from .common import EXIT_FAILED, UrlOption, console, shown_url

if TYPE_CHECKING:
    from ..demo import DemoResult, LongSessionReport

# At 2,000 the scripted long session cannot fit one tool pair plus a summary (InsufficientBudget);
# 4,000 leaves a margin, so a too-small --window is a usage error, not a failed run.
MIN_DEMO_WINDOW: Final = 4_000


def demo(
    url: UrlOption = None,
    window: Annotated[
        int,
        typer.Option(
            min=MIN_DEMO_WINDOW,
            help="Context window of the long session (its tool outputs need at least 4,000).",
        ),
    ] = 128_000,
    factor: Annotated[
        int, typer.Option(min=1, help="Windows' worth of traffic to push through.")
    ] = 3,
) -> None:
    """Run a scripted agent session, restart the store, then a long session through compaction."""
    try:  # the demo runs an Agents SDK agent; no other command needs the SDK
        from ..demo import run_demo, run_long_session
    except ImportError as missing:
        raise typer.BadParameter(
            f"the demo runs an OpenAI Agents SDK agent, and {missing.name} is not installed: "
            "pip install 'sessionstore[agents]'",
            param_hint="demo",
        ) from None
    result = asyncio.run(run_demo(url))
    console.rule(f"[bold]sessionstore demo[/] on {shown_url(url)}")
    ok = _print_restart(result)
    console.rule(
        f"[bold]A long session: {factor} x a {window:,}-token window, compacted as it goes"
    )
    with console.status("running the long session (offline, extractive summaries)..."):
        report = asyncio.run(run_long_session(url, window=window, factor=factor))
    ok = _print_long(report) and ok
    if not ok:
        raise typer.Exit(code=EXIT_FAILED)


def _print_restart(result: DemoResult) -> bool:
    for answer in result.answers:
        console.print(f"[cyan]assistant:[/] {answer}")
    table = Table(title="Rows of the active context (messages table)")
    for column in ("seq", "kind", "role", "item_type", "tool_name", "tokens"):
        table.add_column(column, justify="right" if column in ("seq", "tokens") else "left")
    for row in result.rows:
        table.add_row(
            str(row.seq),
            row.kind,
            row.role or "",
            row.item_type or "",
            row.tool_name or "",
            str(row.tokens),
        )
    console.print(table)
    same = result.context_after_restart == result.context_before_restart
    console.print(
        f"Restarted the store: reloaded {len(result.context_after_restart)} items, "
        f"identical: [bold]{'yes' if same else 'NO'}[/]; token total before "
        f"{result.tokens_before_restart}, after {result.tokens_after_restart}."
    )
    from ..demo import DEMO_SESSION, TOOLS_QUERY

    console.print(f"SQL over the history: which tools did '{DEMO_SESSION}' call?")
    console.print(f"[dim]{TOOLS_QUERY.strip()}[/]")
    for name, calls in result.tool_calls:
        console.print(f"  {name}: {calls} call(s)")
    return same and result.tokens_before_restart == result.tokens_after_restart


def _print_long(report: LongSessionReport) -> bool:
    table = Table(title="Compactions (compactions table)")
    for column in ("v", "trigger", "tokens before", "tokens after", "cut", "summary tokens", "ms"):
        table.add_column(column, justify="left" if column == "trigger" else "right")
    for row in report.compactions:
        cut = 1 - row.tokens_after / row.tokens_before if row.tokens_before else 0.0
        table.add_row(
            str(row.version),
            row.trigger,
            f"{row.tokens_before:,}",
            f"{row.tokens_after:,}",
            f"{cut:.0%}",
            str(row.summary_tokens or "-"),
            f"{row.duration_ms or 0:.0f}",
        )
    console.print(table)
    fits = report.largest_model_input <= report.window
    console.print(
        f"{report.turns} turns, {report.traffic_tokens:,} tokens of traffic "
        f"({report.traffic_tokens / report.window:.1f} windows); largest model input "
        f"{report.largest_model_input:,} tokens (window {report.window:,}): "
        f"[bold]{'never overflowed' if fits else 'OVERFLOWED'}[/]."
    )
    console.print(
        f"Active context now: {report.final_context_items} items, "
        f"{report.final_context_tokens:,} tokens. The current summary begins:"
    )
    console.print(Text(report.summary_preview, style="dim"))  # stored text is data, not markup
    return fits and len(report.compactions) >= 1
