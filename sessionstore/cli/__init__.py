"""The `sessionstore` command line."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from .database import open_database, resolve_url
from .errors import SessionStoreError
from .migrations import current_revision, head_revision, upgrade

app = typer.Typer(
    help="sessionstore: SQL session memory for LLM agents, with automatic compaction.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()
err_console = Console(stderr=True)

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="SESSIONSTORE_URL",
        help="Database URL (default: sqlite:///sessionstore.db in the working directory).",
    ),
]


@app.command()
def migrate(url: UrlOption = None, revision: str = "head") -> None:
    """Create or upgrade the sessionstore tables (Alembic) to REVISION (default: newest)."""

    async def run() -> tuple[str | None, str | None]:
        database = open_database(resolve_url(url))
        try:
            before = await current_revision(database)
            await upgrade(database, revision)
            return before, await current_revision(database)
        finally:
            await database.dispose()

    before, after = asyncio.run(run())
    target = resolve_url(url).render_as_string(hide_password=True)
    if before == after:
        console.print(f"[green]{target} is already at revision {after} (newest: {head_revision()})")
    else:
        console.print(f"[green]{target}: migrated {before or 'empty'} -> {after}")


@app.command()
def demo(url: UrlOption = None) -> None:
    """Run a scripted multi-turn agent session, restart the store, show the reloaded context."""
    from .demo import DEMO_SESSION, TOOLS_QUERY, run_demo

    result = asyncio.run(run_demo(url))
    target = resolve_url(url).render_as_string(hide_password=True)
    console.rule(f"[bold]sessionstore demo[/] on {target}")
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
    console.print(f"SQL over the history: which tools did '{DEMO_SESSION}' call?")
    console.print(f"[dim]{TOOLS_QUERY.strip()}[/]")
    for name, calls in result.tool_calls:
        console.print(f"  {name}: {calls} call(s)")
    if not same or result.tokens_before_restart != result.tokens_after_restart:
        raise typer.Exit(code=1)


def main() -> None:
    """Entry point: user errors print one clear line and exit 2, not a traceback."""
    try:
        app()
    except SessionStoreError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
