"""`sessionstore sessions`: list, show and export sessions (exports redacted by default)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..items import text_of
from ..redaction import Redactor, redaction_disabled_event
from ..rows import SessionInfo, StoredRow, visible_rows
from ..store import SessionStore
from .common import EXIT_FAILED, ConfigOption, UrlOption, console, err_console, open_store

sessions_app = typer.Typer(help="List, show and export sessions.")
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
HistoryOption = Annotated[
    bool, typer.Option("--history", help="Every row ever written, not just the active context.")
]


async def require_session(store: SessionStore, session_id: str) -> SessionInfo:
    """The session's row; an unknown id ends the command (exit 1) before anything is written."""
    info = await store.session_info(session_id)
    if info is None:
        err_console.print(
            f"no session {session_id!r} in {store.safe_url}; "
            "`sessionstore sessions list` shows the sessions there"
        )
        raise typer.Exit(EXIT_FAILED)
    return info


def _info_dict(info: SessionInfo) -> dict[str, Any]:
    return {
        "session_id": info.session_id,
        "items": info.context_items,
        "tokens": info.context_tokens,
        "last_seq": info.last_seq,
        "compactions": info.compaction_count,
        "updated_at": info.updated_at.isoformat(),
    }


@sessions_app.command("list")
def list_(
    url: UrlOption = None,
    config: ConfigOption = None,
    limit: Annotated[
        int, typer.Option(min=1, max=1_000_000, help="At most this many sessions.")
    ] = 100,
    as_json: JsonOption = False,
) -> None:
    """Sessions, most recently updated first."""

    async def go() -> list[SessionInfo]:
        async with open_store(url, config) as store:
            return await store.list_sessions(limit=limit)

    rows = [_info_dict(info) for info in asyncio.run(go())]
    if as_json:
        console.print_json(json.dumps(rows))
        return
    table = Table(title=f"Sessions ({len(rows)})")
    for column in ("session_id", "items", "tokens", "last_seq", "compactions", "updated_at"):
        table.add_column(column, justify="right" if column in ("items", "tokens") else "left")
    for row in rows:
        table.add_row(*(str(value) for value in row.values()))
    console.print(table)


def _rows(
    url: str | None, config: Path | None, session_id: str, history: bool, redact: bool
) -> tuple[list[StoredRow], Redactor]:
    """The session's rows and the redactor to print them with (the config's patterns)."""

    async def go() -> tuple[list[StoredRow], Redactor]:
        async with open_store(url, config) as store:
            await require_session(store, session_id)
            if not redact:
                await store.record_events([redaction_disabled_event(session_id)])
            found = await (store.history(session_id) if history else store.context_rows(session_id))
            return found, store.redactor if redact else Redactor(enabled=False)

    rows, redactor = asyncio.run(go())
    if not redact:
        err_console.print("[red]warning:[/] redaction is off; secrets are printed as stored")
    if not rows:
        err_console.print(
            f"session {session_id!r} has no rows in its active context (it was cleared); "
            "--history shows every row"
        )
        raise typer.Exit(EXIT_FAILED)
    return rows, redactor


@sessions_app.command()
def show(
    session_id: Annotated[str, typer.Argument(help="The session.")],
    url: UrlOption = None,
    config: ConfigOption = None,
    history: HistoryOption = False,
    redact: Annotated[bool, typer.Option(help="Redact secrets in the output.")] = True,
    as_json: JsonOption = False,
) -> None:
    """The rows of a session: seq, kind, role/type, tool, tokens and a preview."""
    rows, redactor = _rows(url, config, session_id, history, redact)
    if as_json:
        console.print_json(json.dumps([_row_dict(row, redactor) for row in rows], default=str))
        return
    table = Table(title=f"{session_id}: {'history' if history else 'active context'}")
    for column in ("seq", "kind", "role/type", "tool", "tokens", "text"):
        table.add_column(column, justify="right" if column in ("seq", "tokens") else "left")
    for row in rows:
        text = " ".join(text_of(redactor.value(row.item)).split()) if row.item else ""
        table.add_row(
            str(row.seq),
            row.kind,
            row.role or row.item_type or "",
            row.tool_name or "",
            str(row.tokens),
            text[:80],
        )
    console.print(table)


def _row_dict(row: StoredRow, redactor: Redactor) -> dict[str, Any]:
    return {
        "seq": row.seq,
        "kind": row.kind,
        "role": row.role,
        "item_type": row.item_type,
        "tool_name": row.tool_name,
        "call_id": row.call_id,
        "tokens": row.tokens,
        "ref_seq": row.ref_seq,
        "created_at": row.created_at,
        "item": redactor.value(row.item),
    }


@sessions_app.command()
def export(
    session_id: Annotated[str, typer.Argument(help="The session.")],
    url: UrlOption = None,
    config: ConfigOption = None,
    history: HistoryOption = False,
    output: Annotated[Path | None, typer.Option(help="Write here instead of stdout.")] = None,
    redact: Annotated[bool, typer.Option(help="Redact secrets (on by default).")] = True,
) -> None:
    """JSON lines: the active context's items as the model sees them (with --history: every
    row, markers included)."""
    rows, redactor = _rows(url, config, session_id, history, redact)
    if history:
        lines = [
            json.dumps(_row_dict(row, redactor), default=str, ensure_ascii=False) for row in rows
        ]
    else:  # the active context's rows already hold what load_context would return
        items = [row.item for row in visible_rows(rows)]
        lines = [json.dumps(redactor.value(item), ensure_ascii=False) for item in items]
    text = "".join(line + "\n" for line in lines)
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise typer.BadParameter(
                f"cannot write {output}: {exc.strerror}", param_hint="--output"
            ) from None
        err_console.print(f"wrote {len(lines)} line(s) to {output}")
