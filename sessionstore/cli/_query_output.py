"""How `sessionstore query` prints rows: a table, JSON, newline-delimited JSON, CSV or TSV.

Output is data: cells are redacted (unless the caller opted out), never read as Rich
markup, NULL stays distinguishable from '' and BLOBs are base64 text.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from .._redaction import Redactor
from ._output import records_text
from ._text import json_text, shown


def cell(value: Any, redactor: Redactor) -> Any:
    """One value as JSON-safe data: BLOB -> base64 text, NaN/Infinity -> their names."""
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN/Infinity: "nan", "inf", "-inf"
    if isinstance(value, int | float | bool) or value is None:
        return value
    if isinstance(value, dict | list):  # a JSON column (PostgreSQL jsonb)
        return _json_cell(value, redactor)
    text = value if isinstance(value, str) else str(value)
    if text[:1] in ("{", "["):  # JSON in a TEXT column (SQLite): redact it as JSON, not as text
        try:
            parsed = json.loads(text)
        except ValueError:
            pass
        else:
            if isinstance(parsed, dict | list):
                return _json_cell(parsed, redactor)
    return redactor.text(text)


def _json_cell(value: dict[str, Any] | list[Any], redactor: Redactor) -> str:
    """Compact JSON text (as stored), redacted by structure, so it stays valid JSON and
    reads the same from both backends."""
    return json_text(redactor.value(value), compact=True)


def render_text(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: str,
    headers: bool,
    redactor: Redactor,
) -> str:
    """The rows as json/nl/csv/tsv text (the table format is `render_table`)."""
    data = [[cell(value, redactor) for value in row] for row in rows]
    return records_text(columns, data, fmt, headers=headers)


def render_table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], headers: bool, redactor: Redactor
) -> Table:
    """A Rich table whose cells are plain Text (stored `[/]` is printed, not parsed)."""
    table = Table(title=f"{len(rows)} row(s)", show_header=headers)
    for column in columns:
        table.add_column(shown(column))
    for row in rows:
        values = [cell(value, redactor) for value in row]
        table.add_row(*(Text("NULL", style="dim") if v is None else shown(v) for v in values))
    return table
