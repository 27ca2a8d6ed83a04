"""How `sessionstore query` prints rows: a table, JSON, newline-delimited JSON, CSV or TSV.

Output is data: cells are redacted (unless the caller opted out), never read as Rich
markup, NULL stays distinguishable from '' and BLOBs are base64 text.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import math
from collections.abc import Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from ..redaction import Redactor

FORMATS = ("table", "json", "nl", "csv", "tsv")


def cell(value: Any, redactor: Redactor) -> Any:
    """One value as JSON-safe data: BLOB -> base64 text, NaN/Infinity -> their names."""
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN/Infinity: "nan", "inf", "-inf"
    if isinstance(value, int | float | bool) or value is None:
        return value
    return redactor.text(value if isinstance(value, str) else str(value))


def render_text(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: str,
    headers: bool,
    redactor: Redactor,
) -> str:
    """The rows as json/nl/csv/tsv text (the table format is `render_table`)."""
    data = [[cell(value, redactor) for value in row] for row in rows]
    if fmt == "json":
        return json.dumps([dict(zip(columns, row, strict=True)) for row in data], indent=2) + "\n"
    if fmt == "nl":
        return "".join(json.dumps(dict(zip(columns, row, strict=True))) + "\n" for row in data)
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
    if headers:
        writer.writerow(columns)
    writer.writerows(data)  # NULL is an empty field; '' is written the same (see docs)
    return out.getvalue()


def render_table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], headers: bool, redactor: Redactor
) -> Table:
    """A Rich table whose cells are plain Text (stored `[/]` is printed, not parsed)."""
    table = Table(title=f"{len(rows)} row(s)", show_header=headers)
    for column in columns:
        table.add_column(Text(column))
    for row in rows:
        values = [cell(value, redactor) for value in row]
        table.add_row(*(Text("NULL", style="dim") if v is None else Text(str(v)) for v in values))
    return table
