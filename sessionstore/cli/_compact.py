"""`sessionstore compact` / `compactctl`: run, dry-run or diff a compaction.

`--diff` and `--dry-run` only preview (the store is opened read-only); `--diff --write`
previews and compacts. Previews and the summary are redacted unless --no-redact, and
printed verbatim. A summarizer that failed is reported, and the command exits 1.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from .._builders import build_manager, build_store
from .._commands import cli_command
from .._config import SessionStoreConfig
from .._redaction import Redactor, redaction_disabled_event
from .._schema import marker_line
from .._store import SessionStore
from ..compaction._outcome import CompactionOutcome
from ..compaction._report import DiffLine, Fate, diff_lines
from ..compaction._summarizers._prompts import BUILTIN_STRATEGIES, resolve_strategy
from ._bulk import AllOption, IdsArgument, WhereOption, resolve, selection
from ._common import (
    ConfigOption,
    RedactOption,
    UrlOption,
    console,
    emit_json,
    err_console,
    is_terminal,
    load_settings,
    record_audit,
)
from ._exit_codes import EXIT_FAILED
from ._progress import progress_bar
from ._sessions import require_session
from ._text import shown

_STYLE = {"=": "green", "-": "red"}


def compact(
    session_ids: IdsArgument = None,
    url: UrlOption = None,
    config: ConfigOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Plan only; change nothing.")] = False,
    diff: Annotated[
        bool, typer.Option("--diff", help="Preview every row and its fate (changes nothing).")
    ] = False,
    write: Annotated[
        bool, typer.Option("--write", help="With --diff: compact after the preview.")
    ] = False,
    strategy: Annotated[
        str | None, typer.Option(help=f"One of {', '.join(sorted(BUILTIN_STRATEGIES))}.")
    ] = None,
    window: Annotated[
        int | None,
        typer.Option(min=1, max=1_000_000_000, help="The model's context window (default 128000)."),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Model whose tokenizer counts (default gpt-4o).")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible summarizer endpoint (default: offline).")
    ] = None,
    summarizer_model: Annotated[str | None, typer.Option(help="Model for --base-url.")] = None,
    note: Annotated[str, typer.Option(help="Recorded with the compaction.")] = "cli",
    redact: RedactOption = True,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Machine-readable output (one object; a list of them when the sessions are "
            "chosen as a set: several ids, `-`, --all or --where).",
        ),
    ] = False,
    every: AllOption = False,
    where: WhereOption = None,
) -> None:
    """Compact sessions now (manual trigger); --dry-run/--diff show kept, summarized, dropped.

    Choose the sessions by id (`-` reads ids from stdin, one per line), --all, or --where
    CONDITION (SQL over the sessions table, checked as `query` checks SQL). A summarizer
    that failed for any session makes the exit code 1, after every session was done.
    With --config, the file's policy, summarizer, sinks and exporters apply; options given
    on the command line win.
    """
    chosen = selection(session_ids, every, where)
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

    if write and not diff:
        raise typer.BadParameter("--write goes with --diff (without --diff, compact writes)")
    if write and dry_run:
        raise typer.BadParameter("pick --dry-run or --write, not both")
    preview = dry_run or (diff and not write)

    ids = resolve(url, config, chosen, "compacted") if chosen.bulk else list(chosen.ids)
    outputs: list[dict[str, object]] = []

    def report(outcome: CompactionOutcome, redactor: Redactor) -> None:
        if as_json:
            outputs.append(_as_json(outcome, redactor))
        else:
            if chosen.bulk:  # which session the lines below are about
                console.print(shown(f"== {outcome.session_id}", "bold"))
            _print(outcome, dry_run=preview, diff=diff, redactor=redactor)

    async def run() -> tuple[list[CompactionOutcome], bool]:
        store = (
            SessionStore(url, model=settings.model, read_only=preview, create_tables=False)
            if from_file is None
            else build_store(settings, read_only=preview)
        )
        manager = build_manager(settings, store)
        outcomes: list[CompactionOutcome] = []
        async with manager.store:
            if not chosen.bulk:
                await require_session(manager.store, ids[0])
            redactor = manager.store.redactor if redact else Redactor(enabled=False)
            encrypted = manager.store.keyring is not None
            with progress_bar(quiet=not chosen.bulk) as bar:
                task = bar.add_task("compacting", total=len(ids))
                for session_id in ids:
                    outcome = await manager.compact(
                        session_id, trigger="manual", note=note, strategy=strategy, dry_run=preview
                    )
                    outcomes.append(outcome)
                    report(outcome, redactor)
                    bar.advance(task)
        if not redact:
            await record_audit(url, config, [redaction_disabled_event(i) for i in ids])
        return outcomes, encrypted

    if not redact:
        err_console.print(shown("warning: redaction is off; secrets are printed as stored", "red"))
    outcomes, encrypted = asyncio.run(run())
    if as_json:
        emit_json(outputs if chosen.bulk else outputs[0])
    if any(o.compacted for o in outcomes) and not preview and not encrypted:
        err_console.print(
            shown(
                "note: archives are stored unencrypted: no key is configured "
                "(`sessionstore keys generate`; docs/SECURITY.md)"
            )
        )
    failed = False
    for outcome in outcomes:  # each failure is reported; the exit code says any failed
        try:
            _fail_on_summarizer_error(outcome)
        except typer.Exit:
            failed = True
    if failed:
        raise typer.Exit(EXIT_FAILED)


def _fail_on_summarizer_error(outcome: CompactionOutcome) -> None:
    """A summarizer that failed is news: say what happened and exit 1 (the compaction
    itself went ahead prune-only, as designed)."""
    if outcome.result is None or outcome.fallback is None:
        return
    reasons = [
        f"{event.fields.get('error_type')}: {event.fields.get('message')}"
        for event in outcome.result.events
        if event.event == "compact.error"
    ]
    err_console.print(
        Text.assemble(
            ("summarizer failed:", "red"),
            " ",
            shown(
                f"{'; '.join(reasons) or 'no summary'}; the compaction went ahead with "
                f"fallback {outcome.fallback} (recent turns and pinned items kept, the rest "
                "archived without a summary)"
            ),
        )
    )
    raise typer.Exit(EXIT_FAILED)


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
    kind = "openai" if settings.summarizer.kind == "extractive" else settings.summarizer.kind
    summarizer = settings.summarizer.model_copy(
        update={"kind": kind, **{k: v for k, v in given.items() if v is not None}}
    )
    return settings.model_copy(update={"summarizer": summarizer})


def _pruned_only(outcome: CompactionOutcome) -> bool:
    """Written without a summary (the summarizer failed): the rows it would have summarized
    were archived with nothing standing for them, and a prior summary stayed as it was."""
    return outcome.result is not None and outcome.summary is None


_TERMINAL_PREVIEW = 72
_WHOLE = 1 << 62  # no stored text is longer


def _lines(outcome: CompactionOutcome) -> list[DiffLine]:
    """The plan's rows with the fates the written compaction gave them; each row's text a
    preview on a terminal, whole into a pipe (`compact --diff | grep` sees every word)."""
    width = _TERMINAL_PREVIEW if is_terminal() else _WHOLE
    lines = diff_lines(outcome.plan, width=width) if outcome.plan else []
    if not _pruned_only(outcome):
        return lines
    return [replace(line, fate=_PRUNED_FATES.get(line.fate, line.fate)) for line in lines]


def _as_json(outcome: CompactionOutcome, redactor: Redactor) -> dict[str, object]:
    lines = _lines(outcome)
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
        "summary": redactor.text(outcome.summary) if outcome.summary else None,
        "summary_written": outcome.result is not None and outcome.summary is not None,
        "rows": [
            {
                "seq": line.seq,
                "fate": line.fate,
                "label": line.label,
                "tokens": line.tokens,
                "preview": redactor.text(line.preview),
            }
            for line in lines
        ],
    }


def _print(outcome: CompactionOutcome, *, dry_run: bool, diff: bool, redactor: Redactor) -> None:
    if outcome.plan is None or outcome.skipped_reason:
        console.print(
            shown(f"Nothing to compact in {outcome.session_id!r}: {outcome.skipped_reason}.")
        )
        return
    lines = _lines(outcome)
    pruned_only = _pruned_only(outcome)
    if diff:
        table = Table(title=shown(f"{outcome.session_id}: what compaction does with each row"))
        for column in ("", "seq", "fate", "role/type", "tokens", "text"):
            table.add_column(column, justify="right" if column in ("seq", "tokens") else "left")
        for line in lines:
            table.add_row(
                shown(line.sign, _STYLE[line.sign]),
                shown(line.seq),
                shown(line.fate),
                shown(line.label),
                shown(line.tokens),
                shown(redactor.text(line.preview)),
            )
        console.print(table)
    counts: dict[str, int] = {}
    for line in lines:
        counts[line.fate] = counts.get(line.fate, 0) + 1
    kept = ", ".join(
        f"{fate} {n}"
        for fate, n in counts.items()
        if fate not in ("summarized", "prior summary", "archived")
    )
    if pruned_only:
        console.print(shown(f"Kept: {kept}; archived without a summary: {_archived(counts)} rows"))
    else:
        console.print(
            shown(
                f"Kept: {kept}; summarized and archived: {counts.get('summarized', 0)} rows"
                + (", replacing the prior summary" if "prior summary" in counts else "")
            )
        )
    verb = "would go" if dry_run else "went"
    caveat = " (estimate: the summary at its full allowance)" if dry_run else ""
    console.print(
        shown(
            f"Tokens {verb} from {outcome.tokens_before:,} to {outcome.tokens_after:,} "
            f"({outcome.reduction:.0%} less{caveat})."
        )
    )
    if dry_run:
        console.print(shown("Preview only: nothing was written (--diff --write compacts)."))
    elif pruned_only:
        _print_pruned_only(outcome, counts)
    elif outcome.result is not None:
        fallback = f", fallback {outcome.fallback}" if outcome.fallback else ""
        archive_show = cli_command(
            "archive show",
            outcome.session_id,
            options=f"--compaction {outcome.result.compaction_id}",
        )
        console.print(
            shown(
                f"Wrote {marker_line(outcome.result.version)} ({outcome.strategy}{fallback}) "
                f"as compaction {outcome.result.compaction_id}; the replaced rows are in "
                f"archive (`{archive_show}`)."
            )
        )
        if outcome.summary:
            console.print(shown(redactor.text(outcome.summary), "dim"))


# A prune-only compaction's fates: nothing was summarized, a prior summary was kept as it was.
_PRUNED_FATES: dict[str, Fate] = {"summarized": "archived", "prior summary": "kept summary"}


def _archived(counts: dict[str, int]) -> int:
    return counts.get("archived", 0)


def _print_pruned_only(outcome: CompactionOutcome, counts: dict[str, int]) -> None:
    """Say plainly that no summary was written, what happened to the rows instead, and how
    to get a summary next time (the archived rows are not summarized again)."""
    assert outcome.result is not None
    compaction = outcome.result.compaction_id
    archive_show = cli_command(
        "archive show", outcome.session_id, options=f"--compaction {compaction}"
    )
    prior = (
        "the prior summary is kept unchanged"
        if "kept summary" in counts
        else "the context has no summary"
    )
    console.print(
        shown(
            f"No summary was written: the summarizer failed (fallback {outcome.fallback}). "
            f"Compaction {compaction} archived {_archived(counts)} rows without summarizing "
            f"them ({prior}); they are only in the archive "
            f"(`{archive_show}`).",
            "red",
        )
    )
    console.print(
        shown(
            "To retry: make the summarizer reachable (--base-url and --summarizer-model, or the "
            "config's summarizer section, and its API key) and run "
            f"`{cli_command('compact', outcome.session_id)}` again; it summarizes what is in the "
            "context then, not the rows archived here."
        )
    )
