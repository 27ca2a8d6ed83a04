"""Which values of the tool outputs the conversation went on to use.

An agent reads a config, a query result or a ticket, then says "I'll point the worker at
that replica" or "assign it to whoever owns it": the value itself is never repeated, so a
summary of what was *said* loses it. Each output's fields (_output_fields.py) are checked
against everything said or called after it: a field whose value is named later, or whose
key's distinctive word ("replica") a later participant uses, was used and is kept, attributed
to its source (`deploy/prod.yaml: database.read_replica = db-7.internal`). An output that was
only acknowledged keeps a few of its fields at low priority; an output nobody touched keeps
none (it stays a count and a pointer among the tool results).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ._output_fields import OutputField, fields_of, key_words
from ._prompts import Entry

__all__ = ["ToolFact", "tool_facts"]

_TOKEN: Final = re.compile(r"[^\W_][\w.@/:+-]*[^\W_]|[^\W_]")
_PIECES: Final = re.compile(r"[^\W_]+")
_GENERIC: Final = frozenset(
    re.split(
        r"\s+",
        "id key value name type data item items result results row rows text body count total "
        "status line list true false none null yes the and for with from this that",
    )
)
_ACKNOWLEDGED_FIELDS: Final = 6  # kept from an output that was answered but not quoted
_SOURCE_ARGUMENTS: Final = 60
_MAX_DISTINCT_KEYS: Final = 2  # a key word shared by more fields names none of them


@dataclass(frozen=True, slots=True)
class ToolFact:
    """One used value of a tool output, attributed to where it was read."""

    subject: str  # "deploy/prod.yaml: database.read_replica", "tickets row OPS-12"
    value: str
    used: bool  # named or referred to later; False: the output was only acknowledged

    def line(self) -> str:
        separator = ": " if " row " in f" {self.subject}" else " = "
        return f"{self.subject}{separator}{self.value}"


def _words(text: str) -> set[str]:
    tokens = {token.lower() for token in _TOKEN.findall(text)}
    return tokens | {piece.lower() for piece in _PIECES.findall(text) if len(piece) >= 3}


def _marks(field: OutputField) -> set[str]:
    """Values a later turn could name: codes, hosts, numbers, names, a row's cells."""
    values = field.cells or (field.value,)
    marks = set()
    for value in values:
        for token in _TOKEN.findall(value):
            distinctive = any(ch.isdigit() or ch in ".@/-" for ch in token) or token[:1].isupper()
            if len(token) >= 3 and distinctive:
                marks.add(token.lower())
    return marks


@dataclass(slots=True)
class _Uses:
    """The last position at which each word was said (messages) or passed (tool calls)."""

    said: dict[str, int]
    passed: dict[str, int]

    @classmethod
    def of(cls, entries: Sequence[Entry], kept: Iterable[str]) -> _Uses:
        said: dict[str, int] = {}
        passed: dict[str, int] = {}
        for position, entry in enumerate(entries):
            if entry.kind == "message" or entry.kind == "other":
                target = said
            elif entry.kind == "tool_call":
                target = passed
            else:
                continue
            for word in _words(entry.text):
                target[word] = position
        end = len(entries)
        for text in kept:  # what stays verbatim after the summary is later than all of it
            for word in _words(text):
                said[word] = end
        return cls(said, passed)

    def named_after(self, word: str, position: int) -> bool:
        return self.said.get(word, -1) > position or self.passed.get(word, -1) > position


def _source(call: Entry | None, paths: Mapping[str | None, str]) -> str:
    """The file a call read, or the call itself: a key read again from the same file is
    the same subject; two lookups with other arguments are two records."""
    if call is None:
        return "tool"
    path = paths.get(call.call_id)
    if path:
        return path
    arguments = " ".join(call.text.split())
    if len(arguments) > _SOURCE_ARGUMENTS:
        arguments = arguments[: _SOURCE_ARGUMENTS - 1] + "…"
    return f"{call.label or 'tool'} {arguments}".strip()


def _subject(source: str, field: OutputField) -> str:
    if field.row and " row " in f" {field.key}":
        return field.key
    return f"{source}: {field.key}" if field.key else source


def _distinct_key_words(fields: Sequence[OutputField]) -> list[set[str]]:
    seen: dict[str, int] = {}
    words = [key_words(field.key) - _GENERIC for field in fields]
    for found in words:
        for word in found:
            seen[word] = seen.get(word, 0) + 1
    return [{word for word in found if seen[word] <= _MAX_DISTINCT_KEYS} for found in words]


def _answered(entries: Sequence[Entry], position: int) -> bool:
    """A participant spoke after the output, before the next output: it was read."""
    for entry in entries[position + 1 :]:
        if entry.kind == "tool_output":
            return False
        if entry.kind == "message":
            return True
    return False


def tool_facts(
    entries: Sequence[Entry], paths: Mapping[str | None, str], kept: Iterable[str] = ()
) -> list[tuple[int, ToolFact]]:
    """(position, fact) of every used tool-output value, oldest first. `paths` maps a call
    id to the file its call named; `kept` are the texts said after the summarized items."""
    calls = {entry.call_id: entry for entry in entries if entry.kind == "tool_call"}
    uses = _Uses.of(entries, kept)
    found: list[tuple[int, ToolFact]] = []
    for position, entry in enumerate(entries):
        if entry.kind != "tool_output":
            continue
        call = calls.get(entry.call_id)
        fields = fields_of(entry.text, call.text if call else "")
        if not fields:
            continue
        source = _source(call, paths)
        distinct = _distinct_key_words(fields)
        used = [
            any(uses.named_after(mark, position) for mark in _marks(field))
            or any(uses.said.get(word, -1) > position for word in words)
            for field, words in zip(fields, distinct, strict=True)
        ]
        if any(used):
            chosen = [(field, True) for field, hit in zip(fields, used, strict=True) if hit]
        elif _answered(entries, position):
            marked = [field for field in fields if _marks(field) and not field.row]
            chosen = [(field, False) for field in marked[:_ACKNOWLEDGED_FIELDS]]
        else:
            chosen = []
        asked = call.text if call else ""
        found.extend(
            (position, ToolFact(_subject(source, field), field.value, hit))
            for field, hit in chosen
            if field.value and field.value not in asked  # an echo of the call says nothing
        )
    return found
