"""`sessionstore compact` / `compactctl`: run, dry-run or diff a compaction."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer
from rich.table import Table

from ..builders import build_manager
from ..compaction.marker import marker_line
from ..compaction.prompts import resolve_strategy
from ..compaction.report import diff_lines
from ..compaction.service import CompactionOutcome
from ..config import SessionStoreConfig
from ..store import SessionStore
from .common import ConfigOption, UrlOption, console, load_settings
from .sessions import require_session

_STYLE = {"=": "green", "-": "red"}


def compact(
    session_id: Annotated[str, typer.Argument(help="The session to compact.")],
    url: UrlOption = None,
    config: ConfigOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Plan only; change nothing.")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="List every row and its fate.")] = False,
    strategy: Annotated[
        str | None, typer.Option(help="task_state, brief, decision_log, code_delta, ...")
    ] = None,
    window: Annotated[
        int | None, typer.Option(min=1, help="The model's context window (default 128000).")
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Model whose tokenizer counts (default gpt-4o).")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible summarizer endpoint (default: offline).")
    ] = None,
    summarizer_model: Annotated[str | None, typer.Option(help="Model for --base-url.")] = None,
    note: Annotated[str, typer.Option(help="Recorded with the compaction.")] = "cli",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Compact SESSION now (manual trigger); --dry-run/--diff show kept, summarized, dropped.

    With --config, the file's policy, summarizer, sinks and exporters apply; options given
    on the command line win.
    """
    from_file = load_settings(url, config)
    settings = _with_options(
        from_file or SessionStoreConfig(),
        model=model,
        window=window,
        base_url=base_url,
        summarizer_model=summarizer_model,
    )
    if strategy is not None:
        try:
            resolve_strategy(strategy, settings.policy.custom_strategies)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--strategy") from None

    async def run() -> CompactionOutcome:
        store = SessionStore(url, model=settings.model) if from_file is None else None
        manager = build_manager(settings, store)
        async with manager.store:
            await require_session(manager.store, session_id)
            return await manager.compact(
                session_id, trigger="manual", note=note, strategy=strategy, dry_run=dry_run
            )

    outcome = asyncio.run(run())
    if as_json:
        console.print_json(json.dumps(_as_json(outcome)))
        return
    _print(outcome, dry_run=dry_run, diff=diff)


def _with_options(
    settings: SessionStoreConfig,
    *,
    model: str | None,
    window: int | None,
    base_url: str | None,
    summarizer_model: str | None,
) -> SessionStoreConfig:
    """The settings with whatever the command line gave winning over the file."""
    top = {"model": model, "max_context_tokens": window}
    settings = settings.model_copy(update={k: v for k, v in top.items() if v is not None})
    if base_url is None and summarizer_model is None:
        return settings
    given = {"base_url": base_url, "model": summarizer_model}
    summarizer = settings.summarizer.model_copy(
        update={"kind": "openai", **{k: v for k, v in given.items() if v is not None}}
    )
    return settings.model_copy(update={"summarizer": summarizer})


def _as_json(outcome: CompactionOutcome) -> dict[str, object]:
    lines = diff_lines(outcome.plan) if outcome.plan else []
    return {
        "session_id": outcome.session_id,
        "compacted": outcome.compacted,
        "tokens_before": outcome.tokens_before,
        "tokens_after": outcome.tokens_after,
        "reduction": round(outcome.reduction, 4),
        "strategy": outcome.strategy,
        "fallback": outcome.fallback,
        "skipped_reason": outcome.skipped_reason,
        "version": outcome.result.version if outcome.result else None,
        "rows": [
            {"seq": line.seq, "fate": line.fate, "label": line.label, "tokens": line.tokens}
            for line in lines
        ],
    }


def _print(outcome: CompactionOutcome, *, dry_run: bool, diff: bool) -> None:
    if outcome.plan is None or outcome.skipped_reason:
        console.print(f"Nothing to compact in {outcome.session_id!r}: {outcome.skipped_reason}.")
        return
    lines = diff_lines(outcome.plan)
    if diff:
        table = Table(title=f"{outcome.session_id}: what compaction does with each row")
        for column in ("", "seq", "fate", "role/type", "tokens", "text"):
            table.add_column(column, justify="right" if column in ("seq", "tokens") else "left")
        for line in lines:
            style = _STYLE[line.sign]
            table.add_row(
                f"[{style}]{line.sign}[/]",
                str(line.seq),
                line.fate,
                line.label,
                str(line.tokens),
                line.preview,
            )
        console.print(table)
    counts: dict[str, int] = {}
    for line in lines:
        counts[line.fate] = counts.get(line.fate, 0) + 1
    console.print(
        "Kept: "
        + ", ".join(
            f"{fate} {n}"
            for fate, n in counts.items()
            if fate not in ("summarized", "prior summary")
        )
        + f"; summarized and archived: {counts.get('summarized', 0)} rows"
        + (", replacing the prior summary" if "prior summary" in counts else "")
    )
    verb = "would go" if dry_run else "went"
    caveat = " (estimate: the summary at its full allowance)" if dry_run else ""
    console.print(
        f"Tokens {verb} from {outcome.tokens_before:,} to {outcome.tokens_after:,} "
        f"({outcome.reduction:.0%} less{caveat})."
    )
    if not dry_run and outcome.result is not None:
        fallback = f", fallback {outcome.fallback}" if outcome.fallback else ""
        console.print(
            f"Wrote {marker_line(outcome.result.version)} ({outcome.strategy}{fallback})."
        )
        if outcome.summary:
            console.print(f"[dim]{outcome.summary}[/]")
