"""Templated-line collapse: routine lines that differ only in their numbers become one line.

A session that looked up 40 orders, or walked through 300 steps, writes the same sentence
with different numbers again and again. Kept line by line, those lines fill the summary and
push out the facts that matter; dropped, the summary no longer says which orders were looked
up. One line per template with its numbers as ranges ("Order 7000-7039 has shipped.") keeps
both. A line collapsed in an earlier round merges with this round's lines of its template,
so a rolling summary keeps one line per template however many rounds it goes through.
A progression (one number counting up: steps 1, 2, ... 212) also says what comes next,
"(212 times; next: 213)", so the summary reads as progress, not as a stale last request.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Final

from ..._ranges import runs as integer_runs

__all__ = [
    "collapse_lines",
    "is_progress",
    "is_templated",
    "number_ranges",
    "routine",
    "templates_of",
]

_RUN: Final = r"\d+(?:-\d+)?"
# A number, or a list of numbers and ranges that an earlier collapse wrote ("1-3, 7, 9-12").
# ... or the aligned list of an earlier collapse where several numbers varied ("{0, 6, 12}").
_SLOT: Final = re.compile(
    rf"\{{(?:{_RUN}|…)(?:, (?:{_RUN}|…))*\}}"
    rf"|(?<![\w.]){_RUN}(?:, {_RUN})*(?:, … \d+ more, {_RUN})?(?![\w.]*\d)"
)
_TIMES: Final = re.compile(r" \((\d+) times(?:; next: \d+)?\)$")
_MIN_REPEATS: Final = 3  # two similar lines are a coincidence, three are a template
_MAX_VALUES: Final = 60  # ranges listed per slot before the rest are counted, not named
_MAX_ALIGNED: Final = 12  # values listed per aligned slot: the first 2 and the newest 9
_ELLIPSIS: Final = "…"


def _template(line: str) -> str:
    return _SLOT.sub("#", _TIMES.sub("", line))


def _values(slot: str) -> list[int]:
    values: list[int] = []
    named = re.sub(rf"{_ELLIPSIS} \d+ more", "", slot)  # the hidden values are gone for good
    for low, high in re.findall(r"(\d+)(?:-(\d+))?", named):
        values.extend(range(int(low), int(high or low) + 1))
    return values


def _times(line: str) -> int:
    match = _TIMES.search(line)
    return int(match.group(1)) if match else 1


def number_ranges(values: Sequence[int]) -> str:
    """`1-3, 7, 9-12` for [1, 2, 3, 7, 9, 10, 11, 12]: consecutive runs as ranges, in order."""
    runs = integer_runs(values)
    if len(runs) > _MAX_VALUES:
        hidden = len(runs) - _MAX_VALUES
        runs = [*runs[: _MAX_VALUES - 1], f"{_ELLIPSIS} {hidden} more", runs[-1]]
    return ", ".join(runs)


def _merge(lines: Sequence[str]) -> str:
    """One line for lines sharing a template: constant numbers kept, the varying one as
    ranges; when several vary, each is listed in line order so their pairing survives."""
    bodies = [_TIMES.sub("", line) for line in lines]
    slots = list(zip(*(_SLOT.findall(body) for body in bodies), strict=True))
    varying = {slot for slot in slots if len(set(slot)) > 1}
    parts = _SLOT.split(bodies[0])
    text = parts[0]
    shown: set[tuple[str, ...]] = set()
    after: int | None = None
    for slot, tail in zip(slots, parts[1:], strict=True):
        if slot not in varying:
            text += slot[0]
        elif len(varying) > 1:
            text += "{" + ", ".join(_capped(_members(slot))) + "}"
        elif slot in shown:  # one number, repeated in the line ({"id": 7}: {"id": 7})
            text += _ELLIPSIS
        else:
            values = [value for written in slot for value in _values(written)]
            text += number_ranges(values)
            after = _next(values) if len(varying) == 1 else None
            shown.add(slot)
        text += tail
    times = sum(_times(line) for line in lines)
    return f"{text} ({times} times; next: {after})" if after else f"{text} ({times} times)"


def _next(values: Sequence[int]) -> int | None:
    """The step after a progression: one number counting up from 0 or 1 without a gap, in
    line order ("Continue with step 1-212" was done, 213 comes next); None for any other
    pattern (ids looked up one after another, orders 7000-7039, are not steps)."""
    ordered = all(b == a + 1 for a, b in itertools.pairwise(values))
    return values[-1] + 1 if ordered and values[0] <= 1 else None


def _members(slot: Sequence[str]) -> list[str]:
    """A varying slot's values in line order, an earlier collapse's list flattened ("…",
    values it no longer names, is dropped alike in every slot, so they stay aligned)."""
    members: list[str] = []
    for written in slot:
        if written.startswith("{"):
            members += [
                v.strip() for v in written[1:-1].split(",") if v.strip() not in ("", _ELLIPSIS)
            ]
        else:
            members.append(written)
    return members


def _capped(members: list[str]) -> list[str]:
    """At most _MAX_ALIGNED values: the first two and the newest ones, "…" between."""
    if len(members) <= _MAX_ALIGNED:
        return members
    return [*members[:2], _ELLIPSIS, *members[-(_MAX_ALIGNED - 3) :]]


def is_progress(line: str) -> bool:
    """A collapsed progression ("(212 times; next: 213)"): the state of the work, kept like
    the facts, not evicted with the routine lines it replaced."""
    match = _TIMES.search(line)
    return match is not None and "; next: " in match.group(0)


def is_templated(line: str) -> bool:
    """A line an earlier collapse wrote: routine, however many numbers it names."""
    return _TIMES.search(line) is not None


def templates_of(lines: Sequence[str]) -> dict[str, int]:
    """How often each template occurs among `lines`, earlier collapses counted in full."""
    counts: dict[str, int] = {}
    for line in lines:
        template = _template(line)
        if "#" in template:
            counts[template] = counts.get(template, 0) + _times(line)
    return counts


def routine(line: str, counts: dict[str, int]) -> bool:
    """Whether `line` is one of a template's repetitions (3+ times): routine progress."""
    return is_templated(line) or counts.get(_template(line), 0) >= _MIN_REPEATS


def collapse_lines(lines: Sequence[str]) -> list[str]:
    """Lines whose template is seen 3+ times (counting earlier collapses) merged into one,
    at the template's first position."""
    groups: dict[str, list[str]] = {}
    for line in lines:
        groups.setdefault(_template(line), []).append(line)
    collapsed: list[str] = []
    for line in lines:
        template = _template(line)
        group = groups.pop(template, None)
        if group is None:
            continue
        repeats = sum(_times(member) for member in group)
        if len(group) < 2 or repeats < _MIN_REPEATS or "#" not in template:
            collapsed.extend(group)
        else:
            collapsed.append(_merge(group))
    return collapsed
