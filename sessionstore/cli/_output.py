"""How every listing prints its records: a table, JSON, newline-delimited JSON, CSV or TSV.

One implementation for all of them (`sessions list/show`, `events`, `archive list`,
`usage`, `search`, `retention`, `query`): the same four flags, the same text for each
format, the same note on stderr when a limit cut the list.

The table is drawn on a terminal only; into a pipe or a file it is plain lines (see
`_common.plain_table`). JSON escapes terminal controls (still the same data); CSV/TSV
carry the stored text exactly into a pipe and, on a terminal, with control characters
shown as escapes. Values are data: never read as markup.
"""

from __future__ import annotations

import base64
import csv
import io
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer
from rich.table import Table

from ._common import console, err_console, is_terminal, iso_utc
from ._text import json_text, shown, visible

if TYPE_CHECKING:  # a listing may be printed without opening a store (`sessions list`)
    import sqlalchemy as sa
    from sqlalchemy.engine import Connection

    from .._store import SessionStore

FORMATS: Final = ("table", "json", "nl", "csv", "tsv")

JsonFlag = Annotated[bool, typer.Option("--json", help="A JSON array of objects.")]
NlFlag = Annotated[bool, typer.Option("--nl", help="Newline-delimited JSON: one object per line.")]
CsvFlag = Annotated[bool, typer.Option("--csv", help="CSV, with a header row.")]
TsvFlag = Annotated[bool, typer.Option("--tsv", help="Tab-separated values, with a header row.")]


def chosen_format(as_json: bool, as_nl: bool, as_csv: bool, as_tsv: bool) -> str:
    """The format the flags ask for ("table" without one); two at once is a usage error."""
    chosen = [
        name
        for name, on in (("json", as_json), ("nl", as_nl), ("csv", as_csv), ("tsv", as_tsv))
        if on
    ]
    if len(chosen) > 1:
        raise typer.BadParameter(
            f"pick one output format, not {' and '.join('--' + name for name in chosen)}"
        )
    return chosen[0] if chosen else "table"


def json_value(value: object) -> object:
    """What JSON cannot hold as is: a time as ISO 8601 with its zone, bytes as base64."""
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def _field(value: object, terminal: bool) -> object:
    """One CSV/TSV field: nested data as compact JSON, NULL as an empty field."""
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json_text(value, compact=True, default=json_value)
    if isinstance(value, datetime | bytes | bytearray | memoryview):
        value = json_value(value)
    if isinstance(value, str) and terminal:
        return visible(value)
    return value


def records_text(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str, *, headers: bool = True
) -> str:
    """The rows as json/nl/csv/tsv text (`fmt` other than "table")."""
    if fmt == "json":
        objects = [dict(zip(columns, row, strict=True)) for row in rows]
        return json_text(objects, indent=2, default=json_value) + "\n"
    if fmt == "nl":
        return "".join(
            json_text(dict(zip(columns, row, strict=True)), default=json_value) + "\n"
            for row in rows
        )
    terminal = is_terminal()
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
    if headers:
        writer.writerow(columns)
    writer.writerows([_field(value, terminal) for value in row] for row in rows)
    return out.getvalue()


def emit_records(
    records: Sequence[Mapping[str, Any]],
    fmt: str,
    table: Callable[[], Table],
    *,
    columns: Sequence[str] | None = None,
) -> None:
    """Print `records` in `fmt`; "table" prints `table()` (drawn on a terminal, plain
    lines into a pipe). `columns` when `records` may be empty (the CSV header)."""
    if fmt == "table":
        console.print(table())
        return
    names = list(columns) if columns is not None else list(records[0]) if records else []
    rows = [[record.get(name) for name in names] for record in records]
    write_text(records_text(names, rows, fmt))


def write_text(text: str) -> None:
    """Machine-readable text to stdout, as is."""
    sys.stdout.write(text)
    sys.stdout.flush()


def note_cut(shown_count: int, total: int | None, what: str, option: str = "--limit N") -> None:
    """On stderr, when a limit cut the list: how many of how many are shown and the option
    that shows more (`total` None when it is only known that there are more)."""
    if total is None:
        note = f"note: the first {shown_count:,} {what} shown; there are more ({option} for more)"
    else:
        note = f"note: {shown_count:,} of {total:,} {what} shown ({option} for more)"
    err_console.print(shown(note, "yellow"))


async def count_rows(store: SessionStore, table: sa.Table, *where: Any) -> int:
    """How many rows of `table` match `where` (for the note of a cut list)."""
    import sqlalchemy as sa  # loaded already: the store is open

    def count(conn: Connection) -> int:
        query = sa.select(sa.func.count()).select_from(table)
        return int(conn.execute(query.where(*where)).scalar_one())

    return await store.read_snapshot(count)
