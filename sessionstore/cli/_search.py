"""`sessionstore search`: full-text search over every session's history.

Hits are printed as data (redacted unless --no-redact, never read as markup); `--json` gives
each hit's row and redacted item. Reads only.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from rich.table import Table

from .._redaction import redaction_disabled_event
from .._search import SearchHit, search_words
from ._common import (
    EXIT_FAILED,
    ConfigOption,
    RedactOption,
    UrlOption,
    console,
    emit_json,
    err_console,
    iso_utc,
    open_store,
    record_audit,
)
from ._text import shown


def search(
    query: Annotated[str, typer.Argument(help="Words that must all be in a row.")],
    url: UrlOption = None,
    config: ConfigOption = None,
    session: Annotated[str | None, typer.Option(help="Only this session's history.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="At most this many hits.")] = 20,
    redact: RedactOption = True,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Rows of any session's history holding every word, best match first (rows sealed by
    payload encryption are not indexed)."""
    try:
        search_words(query)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="QUERY") from None

    async def go() -> list[SearchHit]:
        async with open_store(url, config, read_only=True) as store:
            return await store.search(query, session_id=session, limit=limit, redact=redact)

    hits = asyncio.run(go())
    if not redact:
        asyncio.run(record_audit(url, config, [redaction_disabled_event(session)]))
        err_console.print(shown("warning: redaction is off; secrets are printed as stored", "red"))
    if as_json:
        emit_json([_hit_dict(hit) for hit in hits])
    else:
        table = Table(title=shown(f"Search {query!r}: {len(hits)} hit(s)"))
        for column in ("session_id", "seq", "role/tool", "created_at", "text"):
            table.add_column(column, justify="right" if column == "seq" else "left")
        for hit in hits:
            table.add_row(
                shown(hit.session_id),
                shown(hit.seq),
                shown(hit.tool_name or hit.role or hit.kind),
                shown(iso_utc(hit.created_at)),
                shown(hit.snippet),
            )
        console.print(table)
    if not hits:
        err_console.print(shown("no row holds every word; try fewer words"))
        raise typer.Exit(EXIT_FAILED)


def _hit_dict(hit: SearchHit) -> dict[str, object]:
    return {
        "session_id": hit.session_id,
        "seq": hit.seq,
        "kind": hit.kind,
        "role": hit.role,
        "tool_name": hit.tool_name,
        "created_at": iso_utc(hit.created_at),
        "snippet": hit.snippet,
        "item": hit.item,
    }
