"""`sessionstore archive show`: the originals a compaction replaced, decrypted and verified."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer

from ..archive.reader import read_archives
from ..archive_sealing import OpenedArchive
from ..redaction import Redactor, redaction_disabled_event
from .common import EXIT_FAILED, ConfigOption, UrlOption, console, err_console, open_store
from .sessions import require_session

archive_app = typer.Typer(help="Archived originals (compaction, truncation).")


@archive_app.command()
def show(
    session_id: Annotated[str, typer.Argument(help="Session whose archives to show.")],
    url: UrlOption = None,
    config: ConfigOption = None,
    compaction: Annotated[
        int | None, typer.Option(min=1, max=2**63 - 1, help="Only this compaction's archive.")
    ] = None,
    redact: Annotated[bool, typer.Option(help="Redact secrets in the output.")] = True,
    as_json: Annotated[
        bool, typer.Option("--json", help="JSON lines, one archived row each.")
    ] = False,
) -> None:
    """Print archived rows (secrets redacted unless --no-redact; --config adds its patterns)."""

    async def go() -> tuple[list[OpenedArchive], Redactor]:
        async with open_store(url, config) as store:
            await require_session(store, session_id)
            opened = await read_archives(store, session_id, compaction_id=compaction)
            if compaction is not None and not opened:
                err_console.print(
                    f"session {session_id!r} has no archive of compaction {compaction}; "
                    "`sessionstore archive show SESSION` lists its archives"
                )
                raise typer.Exit(EXIT_FAILED)
            if not redact:
                await store.record_events([redaction_disabled_event(session_id)])
            return opened, store.redactor if redact else Redactor(enabled=False)

    opened, redactor = asyncio.run(go())
    if not redact:
        err_console.print("[red]warning:[/] redaction is off; secrets in the archive are printed")
    if not opened:
        console.print(f"no archives for session {session_id!r}")
        return
    for archive in opened:
        if not as_json:
            console.rule(
                f"archive {archive.archive_id} ({archive.reason}, compaction "
                f"{archive.compaction_id}, seq {archive.from_seq}-{archive.to_seq}, "
                f"key {archive.kek_id or 'none: unencrypted'})"
            )
        for record in archive.records:
            shown = redactor.value(record)
            if as_json:
                print(json.dumps({"archive_id": archive.archive_id, **shown}, ensure_ascii=False))
            else:
                console.print_json(json.dumps(shown, ensure_ascii=False))
