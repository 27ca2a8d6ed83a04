"""`sessionstore search`: full-text search over every session's history.

Hits are printed as data (redacted unless --no-redact, never read as markup); `--json` gives
each hit's row and redacted item. Reads only.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from rich.table import Table

from .._history._search import SearchHit, search_words
from .._items import text_of
from .._opaque import is_opaque
from .._redaction import redaction_disabled_event
from ._common import (
    ConfigOption,
    RedactOption,
    UrlOption,
    err_console,
    is_terminal,
    iso_utc,
    open_store,
    record_audit,
)
from ._exit_codes import EXIT_FAILED
from ._output import CsvFlag, JsonFlag, NlFlag, TsvFlag, chosen_format, emit_records, note_cut
from ._text import shown


def search(
    query: Annotated[str, typer.Argument(help="Words that must all be in a row.")],
    url: UrlOption = None,
    config: ConfigOption = None,
    session: Annotated[str | None, typer.Option(help="Only this session's history.")] = None,
    limit: Annotated[
        int,
        typer.Option(min=1, max=10_000, help="At most this many hits.", show_default=True),
    ] = 20,
    redact: RedactOption = True,
    as_json: JsonFlag = False,
    as_nl: NlFlag = False,
    as_csv: CsvFlag = False,
    as_tsv: TsvFlag = False,
) -> None:
    """Rows of any session's history holding every word, best match first (rows sealed by
    payload encryption are not indexed)."""
    try:
        search_words(query)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="QUERY") from None
    fmt = chosen_format(as_json, as_nl, as_csv, as_tsv)

    async def go() -> list[SearchHit]:
        async with open_store(url, config, read_only=True) as store:
            found = await store.search(query, session_id=session, limit=limit + 1, redact=redact)
            return found

    hits = asyncio.run(go())
    cut = len(hits) > limit
    hits = hits[:limit]
    if not redact:
        asyncio.run(record_audit(url, config, [redaction_disabled_event(session)]))
        err_console.print(shown("warning: redaction is off; secrets are printed as stored", "red"))

    whole = not is_terminal()  # a pipe gets every word of the row, as `sessions show` gives

    def table() -> Table:
        drawn = Table(title=shown(f"Search {query!r}: {len(hits)} hit(s)"))
        for column in ("session_id", "seq", "role/tool", "created_at", "text"):
            drawn.add_column(column, justify="right" if column == "seq" else "left")
        for hit in hits:
            drawn.add_row(
                shown(hit.session_id),
                shown(hit.seq),
                shown(hit.tool_name or hit.role or hit.kind),
                shown(iso_utc(hit.created_at)),
                shown(_whole_text(hit) if whole else hit.snippet),
            )
        return drawn

    emit_records([_hit_dict(hit) for hit in hits], fmt, table, columns=_HIT_COLUMNS)
    if cut:
        note_cut(len(hits), None, "hits")
    if not hits:
        err_console.print(shown("no row holds every word; try fewer words"))
        raise typer.Exit(EXIT_FAILED)


def _whole_text(hit: SearchHit) -> str:
    """The row's whole text on one line (a provider's opaque item: what it is)."""
    if is_opaque(hit.item):
        return hit.snippet
    return " ".join(text_of(hit.item).split()) or hit.snippet


_HIT_COLUMNS = ("session_id", "seq", "kind", "role", "tool_name", "created_at", "snippet", "item")


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
