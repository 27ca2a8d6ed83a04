"""`sessionstore archive`: list archives, and show the originals they hold, decrypted and
verified, redacted unless --no-redact.

Archives are found by their own session id, so those kept after their session was
deleted (retention can keep them) still open.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated

import typer
from rich.table import Table

from .._commands import cli_command
from .._redaction import Redactor, redaction_disabled_event
from .._schema import archives as archives_table
from ..archive import ArchiveInfo, OpenedArchive, list_archives, read_archives
from ._common import (
    ConfigOption,
    RedactOption,
    UrlOption,
    console,
    err_console,
    is_terminal,
    iso_utc,
    open_store,
    record_audit,
)
from ._exit_codes import EXIT_FAILED
from ._guard import command_group
from ._output import (
    CsvFlag,
    JsonFlag,
    NlFlag,
    TsvFlag,
    chosen_format,
    count_rows,
    emit_records,
    note_cut,
)
from ._text import json_text, shown

archive_app = command_group(help="Archived originals (compaction, truncation).")
_MAX_ID = 2**63 - 1


_ARCHIVE_COLUMNS = (
    "archive_id",
    "session_id",
    "reason",
    "compaction_id",
    "seqs",
    "items",
    "encrypted",
    "key",
    "created_at",
)


@archive_app.command("list")
def list_(
    session_id: Annotated[str | None, typer.Argument(help="Only this session's.")] = None,
    url: UrlOption = None,
    config: ConfigOption = None,
    limit: Annotated[
        int, typer.Option(min=1, max=1_000_000, help="The newest N.", show_default=True)
    ] = 100,
    as_json: JsonFlag = False,
    as_nl: NlFlag = False,
    as_csv: CsvFlag = False,
    as_tsv: TsvFlag = False,
) -> None:
    """Archives, newest last: id, session, reason, seq range, items, encryption (unopened)."""
    fmt = chosen_format(as_json, as_nl, as_csv, as_tsv)

    async def go() -> tuple[list[ArchiveInfo], int | None]:
        async with open_store(url, config, read_only=True) as store:
            found = await list_archives(store, session_id, limit=limit + 1)
            if len(found) <= limit:
                return found, None
            where = [] if session_id is None else [archives_table.c.session_id == session_id]
            return found[1:], await count_rows(store, archives_table, *where)

    infos, total = asyncio.run(go())
    rows = [
        {
            "archive_id": info.archive_id,
            "session_id": info.session_id,
            "reason": info.reason,
            "compaction_id": info.compaction_id,
            "seqs": f"{info.from_seq}..{info.to_seq}",
            "items": info.items,
            "encrypted": info.encrypted,
            "key": info.kek_id,
            "created_at": iso_utc(info.created_at),
        }
        for info in infos
    ]
    if not rows and fmt == "table":
        err_console.print(
            shown("no archives" + (f" of session {session_id!r}" if session_id else ""))
        )
        return

    def table() -> Table:
        drawn = Table(title=f"Archives ({len(rows)})")
        for column in _ARCHIVE_COLUMNS:
            drawn.add_column(column)
        for row in rows:
            drawn.add_row(*(shown("" if value is None else value) for value in row.values()))
        return drawn

    emit_records(rows, fmt, table, columns=_ARCHIVE_COLUMNS)
    if total is not None:
        note_cut(len(rows), total, "archives")


@archive_app.command()
def show(
    session_id: Annotated[str, typer.Argument(help="Session whose archives to show.")],
    url: UrlOption = None,
    config: ConfigOption = None,
    compaction: Annotated[
        int | None, typer.Option(min=1, max=_MAX_ID, help="Only this compaction's archive.")
    ] = None,
    archive: Annotated[
        int | None, typer.Option("--archive", min=1, max=_MAX_ID, help="Only this archive.")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="At most N archived rows per archive.")
    ] = None,
    redact: RedactOption = True,
    as_json: Annotated[
        bool, typer.Option("--json", help="JSON lines, one archived row each.")
    ] = False,
    earlier: Annotated[
        bool,
        typer.Option("--earlier", help="The archives of a deleted session that had this id."),
    ] = False,
) -> None:
    """Print archived rows (secrets redacted unless --no-redact; --config adds its patterns)."""

    async def go() -> tuple[list[OpenedArchive], Redactor]:
        async with open_store(url, config, read_only=True) as store:
            opened = await read_archives(
                store, session_id, compaction_id=compaction, archive_id=archive
            )
            redactor = store.redactor if redact else Redactor(enabled=False)
            alive = await store.session_info(session_id) is not None
            known = opened or alive
            if alive and archive is None:  # the id is in use: keep its sessions apart
                older = [item for item in opened if item.of_deleted_session != earlier]
                opened = [item for item in opened if item.of_deleted_session == earlier]
                if older and not earlier:
                    err_console.print(
                        shown(
                            f"note: {len(older)} archive(s) of a deleted session that had the id "
                            f"{session_id!r} are not shown (--earlier shows them)"
                        )
                    )
        if not known:
            err_console.print(
                shown(
                    f"no session {session_id!r} and no archives of it in {store.safe_url}; "
                    "`sessionstore sessions list` and `sessionstore archive list` show what "
                    "is there"
                )
            )
            raise typer.Exit(EXIT_FAILED)
        if not opened and (compaction is not None or archive is not None):
            which = f"compaction {compaction}" if compaction is not None else f"id {archive}"
            err_console.print(
                shown(
                    f"session {session_id!r} has no archive of {which}; "
                    f"`{cli_command('archive list', session_id)}` lists its archives"
                )
            )
            raise typer.Exit(EXIT_FAILED)
        if opened and not redact:
            await record_audit(url, config, [redaction_disabled_event(session_id)])
        return opened, redactor

    opened, redactor = asyncio.run(go())
    if not opened:
        console.print(shown(f"no archives for session {session_id!r}"))
        return
    if not redact:
        err_console.print(shown("warning: redaction is off; secrets in the archive are printed"))
    terminal = is_terminal()
    for item in opened:
        records = item.records[:limit] if limit is not None else item.records
        if not as_json:
            console.print(
                shown(
                    f"== archive {item.archive_id} ({item.reason}, compaction "
                    f"{item.compaction_id}, seq {item.from_seq}-{item.to_seq}, "
                    f"key {item.kek_id or 'none: unencrypted'})"
                    + (", of a deleted session" if item.of_deleted_session else ""),
                    "bold",
                )
            )
        for record in records:
            visible = redactor.value(record)
            if as_json:
                line = {"archive_id": item.archive_id, **visible}
                sys.stdout.write(json_text(line) + "\n")
            else:  # indented for a person; one record per line into a pipe
                console.print(shown(json_text(visible, indent=2 if terminal else None)))
        if len(records) < len(item.records):
            err_console.print(
                shown(
                    f"note: archive {item.archive_id}: {len(records)} of {len(item.records)} rows"
                )
            )
