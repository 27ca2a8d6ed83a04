"""`sessionstore sessions list`: the sessions, most recently updated first.

The command people run first, and most often, so it starts fast: on a SQLite file at the
newest schema it reads with the standard library alone (`_sqlite/_quick_list.py`);
anywhere else (PostgreSQL, a --config, an old or damaged file) it opens the store, which
reads or refuses as every command does. Both print the same records.
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, Final, TypeVar

import typer
from rich.table import Table

from .._redaction import Redactor, redaction_disabled_event
from .._storage._sqlite._quick_list import SessionPage, quick_session_page
from .._storage._urls import plain_sqlite_file
from ._common import (
    ConfigOption,
    RedactOption,
    UrlOption,
    err_console,
    iso_utc,
    open_store,
    record_audit,
)
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
from ._text import shown

_T = TypeVar("_T")
_COLUMNS: Final = (
    "session_id",
    "items",
    "tokens",
    "last_seq",
    "compactions",
    "updated_at",
    "branch_of",
)


def _record(info: Mapping[str, Any], redactor: Redactor) -> dict[str, Any]:
    """The printed record of a session (a SessionInfo's fields), its ids redacted."""
    parent = info["parent_session_id"]
    if parent is not None:
        parent = redactor.text(parent)
    return {
        "session_id": redactor.text(info["session_id"]),
        "items": info["context_items"],
        "tokens": info["context_tokens"],
        "last_seq": info["last_seq"],
        "compactions": info["compaction_count"],
        "updated_at": iso_utc(info["updated_at"]),
        "branch_of": None if parent is None else f"{parent} @ seq {info['fork_seq']}",
    }


async def _store_page(
    url: str | None, config: Path | None, limit: int
) -> tuple[SessionPage, Redactor]:
    """The page as the store reads it (loading SQLAlchemy and the kernel), and the store's
    redactor (a --config may add patterns)."""
    from .._schema import sessions

    async with open_store(url, config, read_only=True) as store:
        found = await store.list_sessions(limit=limit + 1)
        total = await count_rows(store, sessions) if len(found) > limit else None
        return SessionPage([asdict(info) for info in found[:limit]], total), store.redactor


def _page(url: str | None, config: Path | None, limit: int) -> tuple[SessionPage, Redactor]:
    file = plain_sqlite_file(url) if config is None else None
    quick = None if file is None else quick_session_page(file, limit=limit)
    if quick is not None:
        return quick, Redactor()  # what a store without a config redacts with
    return _run(_store_page(url, config, limit))


def _run(work: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine that opens the store; asyncio is imported for it, not before (40 ms
    of start-up the quick read does without)."""
    import asyncio

    return asyncio.run(work)


def list_(
    url: UrlOption = None,
    config: ConfigOption = None,
    limit: Annotated[
        int,
        typer.Option(min=1, max=1_000_000, help="At most this many sessions.", show_default=True),
    ] = 100,
    as_json: JsonFlag = False,
    as_nl: NlFlag = False,
    as_csv: CsvFlag = False,
    as_tsv: TsvFlag = False,
    redact: RedactOption = True,
) -> None:
    """Sessions, most recently updated first."""
    fmt = chosen_format(as_json, as_nl, as_csv, as_tsv)
    page, redactor = _page(url, config, limit)
    if not redact:
        redactor = Redactor(enabled=False)
        err_console.print(shown("warning: redaction is off; ids are printed as stored", "red"))
    rows = [_record(info, redactor) for info in page.sessions]

    def table() -> Table:
        drawn = Table(title=f"Sessions ({len(rows)})")
        for column in _COLUMNS:
            drawn.add_column(column, justify="right" if column in ("items", "tokens") else "left")
        for row in rows:
            drawn.add_row(*(shown("" if value is None else value) for value in row.values()))
        return drawn

    emit_records(rows, fmt, table, columns=_COLUMNS)
    if page.total is not None:
        note_cut(len(rows), page.total, "sessions")
    if not redact:
        _run(record_audit(url, config, [redaction_disabled_event()]))
