"""`sessionstore usage`: model calls, tokens and cost, per session, model or day. Reads only."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any

import typer
from rich.table import Table

from .._history._model_calls import USAGE_GROUPS
from .._times import as_utc
from ._common import ConfigOption, UrlOption, open_store
from ._output import CsvFlag, JsonFlag, NlFlag, TsvFlag, chosen_format, emit_records
from ._text import shown

_COLUMNS = ("calls", "input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens")


def usage(
    url: UrlOption = None,
    config: ConfigOption = None,
    session: Annotated[str | None, typer.Option(help="Only this session's calls.")] = None,
    since: Annotated[
        str | None, typer.Option(help="Only calls from this time on (ISO 8601; UTC if no zone).")
    ] = None,
    by: Annotated[
        str, typer.Option(help="Group by session, model or day (UTC).", show_default=True)
    ] = "session",
    as_json: JsonFlag = False,
    as_nl: NlFlag = False,
    as_csv: CsvFlag = False,
    as_tsv: TsvFlag = False,
) -> None:
    """What the model calls recorded by the Agents SDK adapter used and cost (prices: the
    default table or `store.prices` in the config file)."""
    if by not in USAGE_GROUPS:
        raise typer.BadParameter(
            f"use one of {', '.join(USAGE_GROUPS)}, not {by!r}", param_hint="--by"
        )
    start = None if since is None else _when(since)
    fmt = chosen_format(as_json, as_nl, as_csv, as_tsv)

    async def go() -> list[dict[str, Any]]:
        async with open_store(url, config, read_only=True) as store:
            return await store.usage(by=by, session_id=session, since=start)

    rows = asyncio.run(go())

    def table() -> Table:
        drawn = Table(title=f"Usage by {by} ({len(rows)})")
        for column in (by, *_COLUMNS, "cost_usd"):
            drawn.add_column(column, justify="left" if column == by else "right")
        for row in rows:
            cost = "" if row["cost_usd"] is None else f"{row['cost_usd']:.6f}"
            drawn.add_row(*(shown(row[column]) for column in (by, *_COLUMNS)), shown(cost))
        return drawn

    emit_records(rows, fmt, table, columns=[by, *_COLUMNS, "cost_usd"])


def _when(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not a time: use ISO 8601, e.g. 2026-11-25 or 2026-11-25T14:00:00Z",
            param_hint="--since",
        ) from None
    return as_utc(when)
