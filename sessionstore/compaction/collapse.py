"""Templated-line collapse: routine lines that differ only in their numbers become one line.

A session that looked up 40 orders, or walked through 300 steps, writes the same sentence
with different numbers again and again. Kept line by line, those lines fill the summary and
push out the facts that matter; dropped, the summary no longer says which orders were looked
up. One line per template with its numbers as ranges ("Order 7000-7039 has shipped.") keeps
both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

__all__ = ["collapse_lines", "number_ranges"]

_NUMBER: Final = re.compile(r"(?<![\w.])\d+(?![\w.]*\d)")
_MIN_REPEATS: Final = 3  # two similar lines are a coincidence, three are a template
_MAX_VALUES: Final = 60  # values listed per slot before the rest are counted, not named
_ELLIPSIS: Final = "…"


def _template(line: str) -> str:
    return _NUMBER.sub("#", line)


def number_ranges(values: Sequence[int]) -> str:
    """`1-3, 7, 9-12` for [1, 2, 3, 7, 9, 10, 11, 12]: consecutive runs as ranges, in order."""
    ordered = sorted(dict.fromkeys(values))
    runs: list[str] = []
    start = previous = ordered[0]
    for value in [*ordered[1:], None]:
        if value is not None and value == previous + 1:
            previous = value
            continue
        runs.append(str(start) if start == previous else f"{start}-{previous}")
        if value is not None:
            start = previous = value
    if len(runs) > _MAX_VALUES:
        hidden = len(runs) - _MAX_VALUES
        runs = [*runs[: _MAX_VALUES - 1], f"{_ELLIPSIS} {hidden} more", runs[-1]]
    return ", ".join(runs)


def _merge(lines: Sequence[str]) -> str:
    """One line for lines sharing a template: constant numbers kept, varying ones as ranges."""
    slots = list(zip(*([int(n) for n in _NUMBER.findall(line)] for line in lines), strict=True))
    parts = _NUMBER.split(lines[0])
    text = parts[0]
    shown: set[tuple[int, ...]] = set()
    for slot, tail in zip(slots, parts[1:], strict=True):
        if len(set(slot)) == 1:
            text += str(slot[0])
        else:  # a varying number repeated in the line ({"id": 7}: {"id": 7}) is listed once
            text += _ELLIPSIS if slot in shown else number_ranges(slot)
            shown.add(slot)
        text += tail
    return f"{text} ({len(lines)} times)"


def collapse_lines(lines: Sequence[str]) -> list[str]:
    """Lines with each template seen 3+ times merged into one, at its first position."""
    groups: dict[str, list[str]] = {}
    for line in lines:
        groups.setdefault(_template(line), []).append(line)
    collapsed: list[str] = []
    for line in lines:
        group = groups.get(_template(line))
        if group is None:
            continue
        if len(group) < _MIN_REPEATS or "#" not in _template(line):
            collapsed.append(line)
            continue
        collapsed.append(_merge(group))
        del groups[_template(line)]
    return collapsed
