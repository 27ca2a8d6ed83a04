"""Tool outputs read by their structure: the keys, values and rows an agent may go on to use.

A config file, a SQL result, a search hit or an issue-tracker response states its facts as
structure, not as sentences: read as prose, `read_replica: db-7.internal` is neither a
decision nor a constraint and was lost. Each output is tried, in order, as JSON, a table
(markdown, psql, CSV or TSV), YAML, INI or .env, and finally line by line as `key: value`,
`key=value` and log lines. What comes out is a flat list of fields, each a key path and a
value, or a row and its cells; which of them matter is decided later, by whether the
conversation went on to use them (_tool_state.py).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import yaml

__all__ = ["OutputField", "fields_of", "key_words"]

_MAX_FIELDS: Final = 400  # an output bigger than this is read up to here
_MAX_VALUE_CHARS: Final = 160
_MAX_DEPTH: Final = 5
# A row is named by the first of these columns it has, else by its first cell.
_ROW_NAMES: Final = ("id", "key", "number", "ticket", "name", "slug", "code", "title")
_KEY_VALUE: Final = re.compile(
    r"^\s*[-*]?\s*([A-Za-z_][\w .\-/]{0,48}?)\s*(?::|=|:=)\s+(\S.*?)\s*$"
)
_ENV_LINE: Final = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][\w.\-]{0,60})\s*=\s*(.*?)\s*$")
_INI_SECTION: Final = re.compile(r"^\s*\[([^\]]{1,60})\]\s*$")
_LOG_LINE: Final = re.compile(
    r"^\s*\[?(\d{4}-\d{2}-\d{2}[T ][\d:.,]+\S*)\]?\s+\[?([A-Z]{3,8})\]?\s+(.*)$"
)
_LOG_PAIR: Final = re.compile(r"\b([A-Za-z_][\w.\-]{0,40})=(\"[^\"]*\"|'[^']*'|[^\s,;]+)")
_FRAME: Final = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
_LIBRARY_PATHS: Final = ("site-packages", "dist-packages", "/usr/lib/", "<frozen", "/lib/python")
_MAX_BARE_LINES: Final = 15  # a short listing (git log); longer ones are files and greps
_HIT: Final = re.compile(r"^[^\s:]*[./][^\s:]*:\d+[:-]")  # grep -n, ripgrep, compiler diagnostics
_BANNER: Final = re.compile(r"^\s*(?:={3,}|-{3,}|_{3,}) .{0,80}(?:={3,}|-{3,}|_{3,})\s*$")
# A test runner's verdicts: "3 failed, 40 passed in 2.1s", "FAILED tests/a.py::test_b", "not ok 3".
_RUN: Final = re.compile(
    r"\b\d+ (?:passed|failed|errors?|skipped|tests? ran)\b|^(?:FAILED|PASSED|ERROR|XFAIL) "
    r"\S+::|^(?:not )?ok \d+\b|^(?:FAIL|PASS|ok|---) +\S+"
)
# libyaml's safe loader where PyYAML was built with it: ten times the pure-Python one.
_YAML_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_COLUMNS: Final = re.compile(r"^\s*([^\s#]\S{0,80})\s{2,}(\S.{0,120}?)\s*$")
_SEPARATOR_ROW: Final = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:[|+]\s*:?-{3,}:?\s*)*\|?\s*$")
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD_SPLIT: Final = re.compile(r"[^0-9A-Za-zÀ-ÿ]+")


@dataclass(frozen=True, slots=True)
class OutputField:
    """One value of a tool output, or one row of a table it printed."""

    key: str  # "database.read_replica"; for a row, the table's name and the row's name
    value: str  # the value as written; for a row, "owner alice, status open, ..."
    cells: tuple[str, ...] = ()  # a row's values, each of which a later turn may name
    columns: tuple[str, ...] = ()  # a row's column names

    @property
    def row(self) -> bool:
        return bool(self.cells)


def key_words(key: str) -> set[str]:
    """The words of a key ("readReplica_host" -> read, replica, host), lower-cased."""
    spaced = _CAMEL.sub(" ", key)
    return {word.lower() for word in _WORD_SPLIT.split(spaced) if len(word) >= 3}


def _clip(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= _MAX_VALUE_CHARS else flat[: _MAX_VALUE_CHARS - 1] + "…"


def _scalar(value: Any) -> str | None:
    if value is None or isinstance(value, (Mapping, list)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    text = _clip(str(value))
    return text or None


def _row(table: str, header: Sequence[str], cells: Sequence[str]) -> OutputField | None:
    pairs = [(h.strip(), c.strip()) for h, c in zip(header, cells, strict=False)]
    pairs = [(h, c) for h, c in pairs if c and c.lower() not in ("null", "none", "")]
    if not pairs:
        return None
    names = {h.lower(): c for h, c in pairs}
    name_key = next((key for key in _ROW_NAMES if key in names), None)
    name = names[name_key] if name_key else pairs[0][1]
    rest = [f"{h} {c}" for h, c in pairs if c != name]
    label = f"{table} row {name}" if table else f"row {name}"
    cells, columns = tuple(c for _, c in pairs), tuple(h for h, _ in pairs)
    return OutputField(label, _clip(", ".join(rest)), cells, columns)


def _walk(value: Any, path: str, depth: int = 0) -> Iterator[OutputField]:
    """Leaves of a JSON or YAML document; a list of objects is a table of rows."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        for key, child in value.items():
            yield from _walk(child, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, list):
        if value and all(isinstance(entry, Mapping) for entry in value):
            for entry in value:  # nested objects become the row's cells: "assignee.name"
                leaves = list(_walk(entry, "", depth + 1))
                row = _row(
                    path.rsplit(".", 1)[-1], [f.key for f in leaves], [f.value for f in leaves]
                )
                if row is not None:
                    yield row
        else:
            scalars = [s for entry in value if (s := _scalar(entry)) is not None]
            if scalars:
                yield OutputField(path or "list", _clip(", ".join(scalars)))
    elif (scalar := _scalar(value)) is not None:
        yield OutputField(path or "value", scalar)


def _json_fields(text: str) -> list[OutputField] | None:
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        document = json.loads(stripped)
    except ValueError:
        return None
    return list(_walk(document, ""))


def _split_cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _pipe_table(lines: Sequence[str], table: str) -> list[OutputField] | None:
    """A markdown or psql table: a header, a rule of dashes, then rows."""
    for index, line in enumerate(lines[1:], start=1):
        if _SEPARATOR_ROW.match(line) and "|" in lines[index - 1]:
            header = _split_cells(lines[index - 1])
            fields = []
            for row_line in lines[index + 1 :]:
                if "|" not in row_line:
                    continue
                row = _row(table, header, _split_cells(row_line))
                if row is not None:
                    fields.append(row)
            return fields or None
    return None


def _delimited(lines: Sequence[str], table: str) -> list[OutputField] | None:
    """CSV or TSV with a header of names: every line splits into the same number of cells."""
    if len(lines) < 2:
        return None
    delimiter = "\t" if "\t" in lines[0] else "," if "," in lines[0] else None
    if delimiter is None:
        return None
    rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter))
    width = len(rows[0])
    header = rows[0]
    if width < 2 or any(len(row) != width for row in rows[1:]):
        return None
    if not all(re.fullmatch(r"[A-Za-z_][\w .\-]{0,40}", cell.strip()) for cell in header):
        return None
    fields = [row for cells in rows[1:] if (row := _row(table, header, cells)) is not None]
    return fields or None


def _yaml_fields(text: str, lines: Sequence[str]) -> list[OutputField] | None:
    """A YAML mapping; only when most lines look like keys (prose with a colon is not YAML)."""
    keyed = sum(1 for line in lines if re.match(r"^\s*(?:- )?[\w.\-\"']+:(?:\s|$)", line))
    if keyed < max(2, len(lines) // 2):
        return None
    try:
        document = yaml.load(text, Loader=_YAML_LOADER)
    except yaml.YAMLError:
        return None
    if not isinstance(document, Mapping):
        return None
    return list(_walk(document, ""))


def _ini_fields(lines: Sequence[str]) -> list[OutputField] | None:
    """INI sections and .env assignments: `[db]` then `host = x`, or `DB_HOST=x`."""
    section = ""
    fields: list[OutputField] = []
    assignments = 0
    for line in lines:
        if line.lstrip().startswith(("#", ";")):
            continue
        if heading := _INI_SECTION.match(line):
            section = heading.group(1).strip()
            continue
        if match := _ENV_LINE.match(line):
            assignments += 1
            value = match.group(2).strip().strip("\"'")
            if value:
                key = f"{section}.{match.group(1)}" if section else match.group(1)
                fields.append(OutputField(key, _clip(value)))
    return fields if assignments >= max(2, len(lines) // 2) else None


def _line_fields(lines: Sequence[str], listing: bool) -> list[OutputField]:
    """Whatever an unstructured output states as `key: value`, `key=value` or a log line."""
    fields: list[OutputField] = []
    for line in lines:
        if log := _LOG_LINE.match(line):
            level, message = log.group(2), log.group(3)
            pairs = _LOG_PAIR.findall(message)
            fields.extend(OutputField(key, _clip(value.strip("\"'"))) for key, value in pairs)
            if level in ("ERROR", "WARN", "WARNING", "FATAL", "CRITICAL") and not pairs:
                fields.append(OutputField(f"log {level.lower()}", _clip(message)))
            continue
        if match := _KEY_VALUE.match(line):
            key, value = match.group(1).strip(), match.group(2).strip()
            if len(key.split()) <= 4 and not key.lower().startswith(("http", "note")):
                fields.append(OutputField(key, _clip(value)))
                continue
        if frame := _FRAME.match(line):
            path, number, function = frame.groups()
            if not any(part in path for part in _LIBRARY_PATHS):  # the application's own code
                fields.append(OutputField("traceback frame", f"{path}:{number} in {function}"))
            continue
        if column := _COLUMNS.match(line):  # "/search/indexer/   Zofia" (CODEOWNERS, ls -l)
            fields.append(OutputField(column.group(1), _clip(column.group(2))))
            continue
        pairs = _LOG_PAIR.findall(line)
        fields.extend(OutputField(key, _clip(value.strip("\"'"))) for key, value in pairs)
        if not pairs and listing and len(lines) <= _MAX_BARE_LINES:
            fields.append(OutputField("", _clip(line)))  # "b8599671 fix(ratelimit): ..."
    return fields


def _table_name(source: str) -> str:
    """`SELECT ... FROM tickets` names its rows "tickets"; a file names them by its stem."""
    found = re.search(r"\bfrom\s+([A-Za-z_][\w.]*)", source, re.IGNORECASE)
    if found:
        return found.group(1)
    return source.rsplit("/", 1)[-1] if source else ""


def _routine(lines: Sequence[str]) -> bool:
    """Search hits (`path:line: text`) and test-runner logs: a count and a pointer in the
    summary's tool results, never a list of facts."""
    hits = sum(1 for line in lines if _HIT.match(line))
    return hits * 2 >= len(lines) or any(_BANNER.match(line) or _RUN.search(line) for line in lines)


def fields_of(text: str, source: str = "", *, listing: bool = True) -> list[OutputField]:
    """The fields of one tool output; `source` (a path or a query) names its table's rows.
    A `listing` (a command's output, not a file's text) may yield its lines themselves."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or _routine(lines):
        return []
    table = _table_name(source)
    found = (
        _json_fields(text)
        or _pipe_table(lines, table)
        or _delimited(lines, table)
        or _yaml_fields(text, lines)
        or _ini_fields(lines)
        or _line_fields(lines, listing)
    )
    return found[:_MAX_FIELDS]
