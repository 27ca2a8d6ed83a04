"""`sessionstore import`: bring Agents SDK sessions (SQLiteSession, SQLAlchemySession) over.

Safe to re-run: each run imports only what the SDK database gained since the
last one (see sessionstore._jobs._importer). Exit 0 when every session imported
cleanly, 1 when a session was refused or a message skipped, 2 when the source
or target cannot be used at all (nothing was done).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Final

import typer
from rich.table import Table

from .._builders import build_store
from .._errors import DatabaseNotFoundError, SchemaMissingError
from .._jobs._importer import ImportProgress, ImportReport, SessionImport, import_sdk_sessions
from .._jobs._sdk_source import DEFAULT_MESSAGES_TABLE, DEFAULT_SESSIONS_TABLE, SourceOrder
from .._store import DEFAULT_MODEL, SessionStore
from ._common import (
    ConfigOption,
    UrlOption,
    console,
    emit_json,
    load_settings,
    shown_url,
    target_url,
)
from ._exit_codes import EXIT_FAILED
from ._progress import progress_bar
from ._text import shown, visible

_NOTE_PROBLEMS = 2  # problems spelled out per session in the table (--json has them all)
_NOTE_IDS: Final = 10  # ids of messages an earlier run skipped, named in a note


def import_sessions(
    source: Annotated[
        str,
        typer.Argument(
            help="The SDK's database: the file SQLiteSession wrote (conversations.db), or a "
            "SQLAlchemy URL such as sqlite:///conversations.db or "
            "postgresql+asyncpg://user@host/dbname. Only ever read."
        ),
    ],
    url: UrlOption = None,
    config: ConfigOption = None,
    session: Annotated[
        list[str] | None,
        typer.Option("--session", help="Import only this session (repeatable)."),
    ] = None,
    sessions_table: Annotated[
        str, typer.Option(help="The SDK's sessions table (its sessions_table argument).")
    ] = DEFAULT_SESSIONS_TABLE,
    messages_table: Annotated[
        str, typer.Option(help="The SDK's messages table (its messages_table argument).")
    ] = DEFAULT_MESSAGES_TABLE,
    order: Annotated[
        SourceOrder | None,
        typer.Option(
            help="Message order: id (SQLiteSession) or created_at (SQLAlchemySession). "
            "Default: id on SQLite, created_at on PostgreSQL.",
        ),
    ] = None,
    append_to_existing: Annotated[
        bool,
        typer.Option(
            "--append-to-existing",
            help="Append after rows a target session already has instead of refusing it.",
        ),
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(help=f"Model whose tokenizer counts tokens (default: {DEFAULT_MODEL})."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would be imported; write nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Import Agents SDK sessions (SQLiteSession / SQLAlchemySession tables) into sessionstore."""
    progress = progress_bar(quiet=as_json)  # on a terminal only
    task = progress.add_task("importing", total=None)

    def advance(update: ImportProgress) -> None:
        progress.update(
            task, completed=update.done, total=update.total, description=visible(update.session_id)
        )

    async def into(store: SessionStore) -> ImportReport:
        try:
            return await import_sdk_sessions(
                source,
                store,
                sessions_table=sessions_table,
                messages_table=messages_table,
                session_ids=session,
                order=order,
                append_to_existing=append_to_existing,
                dry_run=dry_run,
                progress=advance,
            )
        finally:
            await store.close()

    async def run() -> ImportReport:
        # The store is opened by the import, after the source is checked: entering it first
        # would create or migrate its tables, and a refused source (exit 2) must leave the
        # target as it was. A dry run opens the target read-only, and a target with no
        # sessionstore tables yet as an empty one (nothing is there to be already present).
        try:
            return await into(_target(url, config, model, read_only=dry_run))
        except (DatabaseNotFoundError, SchemaMissingError):
            if not dry_run:
                raise
        empty = SessionStore("sqlite:///:memory:", model=model or DEFAULT_MODEL)
        report = await into(empty)
        report.target = shown_url(target_url(url, config))
        return report

    with progress:
        report = asyncio.run(run())
    if as_json:
        emit_json(report.as_dict())
    else:
        _print(report)
    if not report.ok:
        raise typer.Exit(EXIT_FAILED)


def _target(
    url: str | None, config: Path | None, model: str | None, *, read_only: bool
) -> SessionStore:
    """The store from --url or --config, counting tokens with --model when given."""
    settings = load_settings(url, config)
    if settings is None:
        return SessionStore(url, model=model or DEFAULT_MODEL, read_only=read_only)
    if model is not None:
        settings = settings.model_copy(update={"model": model})
    return build_store(settings, read_only=read_only)


def _notes(session: SessionImport) -> list[str]:
    """Why a session was refused, which messages were skipped, what was recovered."""
    notes = [session.reason] if session.reason else []
    notes += [f"message {p.message_id}: {p.reason}" for p in session.problems[:_NOTE_PROBLEMS]]
    if len(session.problems) > _NOTE_PROBLEMS:
        notes.append(f"... and {len(session.problems) - _NOTE_PROBLEMS} more (see --json)")
    if session.skipped_before:
        ids = ", ".join(map(str, session.skipped_before[:_NOTE_IDS]))
        more = ", ..." if len(session.skipped_before) > _NOTE_IDS else ""
        notes.append(
            f"{len(session.skipped_before)} message(s) an earlier run skipped ({ids}{more}) are "
            "not in the target and cannot be appended out of order: fix them (or raise "
            "max_item_bytes), delete the target session and import again"
        )
    if session.recovered:
        notes.append(f"{session.recovered} item(s) an interrupted run appended were recognised")
    return notes


def _print(report: ImportReport) -> None:
    title = f"Import from {report.source}"
    table = Table(title=title + (" (dry run: nothing written)" if report.dry_run else ""))
    table.add_column("session")
    table.add_column("status")
    for column in ("imported", "skipped", "already present", "tokens"):
        table.add_column(column, justify="right")
    for session in report.sessions:
        style = "red" if not session.ok else "green" if session.status == "imported" else "default"
        table.add_row(
            shown(session.session_id),
            shown(session.status, style),
            shown(f"{session.imported:,}"),
            shown(f"{session.skipped:,}"),
            shown(f"{session.already_present:,}"),
            shown(f"{session.tokens:,}"),
        )
    console.print(table)
    for session in report.sessions:
        for note in _notes(session):
            console.print(shown(f"{session.session_id}: {note}"))
    verb = "Would import" if report.dry_run else "Imported"
    refused = sum(1 for session in report.sessions if session.status in ("refused", "not_found"))
    earlier = sum(len(session.skipped_before) for session in report.sessions)
    console.print(
        shown(
            f"{verb} {report.total('imported'):,} item(s) ({report.total('tokens'):,} tokens) "
            f"from {len(report.sessions)} session(s) into {report.target}; "
            f"{report.total('already_present'):,} already present, "
            f"{report.total('skipped'):,} skipped"
            + (f" ({earlier:,} by an earlier run)" if earlier else "")
            + f", {refused} session(s) refused or not found."
        )
    )
