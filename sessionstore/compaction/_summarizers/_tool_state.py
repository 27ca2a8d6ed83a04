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
from ._subjects import value_types

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
_STEM: Final = 5
_SILENT_FIELDS: Final = 40
_FILE: Final = re.compile(r"/|\.(?:py|js|ts|go|rs|java|rb|md|txt|json|ya?ml|toml|cfg|ini|sql|sh)\b")
_CODE: Final = re.compile(r"\d")
_PATHS: Final = re.compile(r"[\w.~-]*/[\w./-]*")
_ARGUMENT_WORDS: Final = frozenset({"path", "args", "query", "select", "where", "from", "file"})
_TYPED_FIELDS: Final = 3  # a question's type picks its answer only among a few candidates
_I: Final = re.IGNORECASE
_INTERROGATIVES: Final = (
    (re.compile(r"\b(?:who|whom|whose|wer|wem|wen|wessen|quién|quiénes|quien)\b", _I), ("person",)),
    (
        re.compile(
            r"\b(?:how (?:many|much|big|large|long|high|low)|what(?:'s| is) the (?:limit|max|"
            r"cap|size)|wie (?:viele?|groß|hoch|lange)|cuánt[oa]s?|cuál es el (?:límite|máximo))\b",
            _I,
        ),
        ("number", "amount"),
    ),
    (re.compile(r"\b(?:when|by what date|wann|bis wann|cuándo)\b", _I), ("date",)),
    (
        re.compile(r"\b(?:where|which (?:host|box|server|machine)|wo|wohin|dónde)\b", _I),
        ("host", "id", "url"),
    ),
    (re.compile(r"\b(?:which|what) version|welche version|qué versión\b", _I), ("number",)),
)
_GROUP: Final = 6  # fields under one key ("cache.*") a question can ask for at once


@dataclass(frozen=True, slots=True)
class ToolFact:
    """One used value of a tool output, attributed to where it was read."""

    subject: str  # "deploy/prod.yaml: database.read_replica", "tickets row OPS-12"
    value: str
    used: bool  # named or referred to later; False: the output was only acknowledged
    keyed: bool = True  # False: a bare line of a listing, which no later read replaces
    silent: bool = False  # never used: it may only replace an older value of its subject

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
            if len(token) >= 3 and distinctive and not _FILE.search(token):
                marks.add(token.lower())  # a file is worked on, not a value that was used
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
                target[_stem(word)] = position
        end = len(entries)
        for text in kept:  # what stays verbatim after the summary is later than all of it
            for word in _words(text):
                said[word] = end
                said[_stem(word)] = end
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


def _stem(word: str) -> str:
    """A crude, language-blind stem: "assignee" and "assign", "replicas" and "replica"."""
    return word[:_STEM] if len(word) > _STEM else word


def _stems(words: Iterable[str]) -> set[str]:
    return {_stem(word) for word in words if len(word) >= 3} - _GENERIC


def _field_stems(field: OutputField) -> set[str]:
    """What a field is about: its key's words, and for a row or a bare line its cells' words."""
    stems = _stems(key_words(field.key))
    if field.row or not field.key:
        stems |= _stems(key_words(" ".join(field.cells or (field.value,))))
    return stems


def _distinct(
    fields: Sequence[OutputField],
) -> tuple[list[set[str]], list[set[str]], set[str]]:
    """Each field's stems that at most two fields share (what a later mention anywhere
    points at), those a small group shares ("What cache ...?" names `cache.host`,
    `cache.port`: what the question and the answer point at), and the stems every row
    shares (a column: "Which snapshot ...?" asks for one row of many)."""
    seen: dict[str, int] = {}
    stems = [_field_stems(field) for field in fields]
    for found in stems:
        for stem in found:
            seen[stem] = seen.get(stem, 0) + 1
    most = 1 if len(fields) <= 2 * _MAX_DISTINCT_KEYS else _MAX_DISTINCT_KEYS
    distinct = [{stem for stem in found if seen[stem] <= most} for found in stems]
    group = max(most, min(_GROUP, len(fields) - 1))
    grouped = [{stem for stem in found if seen[stem] <= group} for found in stems]
    rows = [field for field in fields if field.row]
    columns = [_stems(key_words(" ".join(field.columns))) for field in rows]
    shared = set.intersection(*columns) if len(columns) > 2 else set()
    return distinct, grouped, shared


def _question(entries: Sequence[Entry], position: int) -> set[str]:
    """The stems of what led to an output: the user's message ("What is max_connections?"),
    what the agent said it would look for ("Let me check the replica settings"), and the
    call's own arguments other than paths (`SELECT owner FROM tickets ...`)."""
    stems: set[str] = set()
    for entry in reversed(entries[:position]):
        if entry.kind == "tool_call" and entry.call_id == entries[position].call_id:
            arguments = " ".join(_PATHS.sub(" ", entry.text).split())
            stems |= _stems(key_words(arguments)) - _ARGUMENT_WORDS
        elif entry.kind in ("message", "other"):
            stems |= _stems(key_words(entry.text))
            if entry.label == "user":
                break
    return stems


def _named(entries: Sequence[Entry], position: int) -> set[str]:
    """Codes the question or the call named ("Who has OPS-12?"): a row holding one is the
    row asked for."""
    named: set[str] = set()
    for entry in reversed(entries[:position]):
        named |= {token.lower() for token in _TOKEN.findall(entry.text) if _CODE.search(token)}
        if entry.kind == "message" and entry.label == "user":
            break
    return named


def _asked_types(entries: Sequence[Entry], position: int) -> frozenset[str]:
    """The type of value the user's question asks for ("Who ...?" a person, "How many ...?"
    a number), from its interrogative in English, German or Spanish."""
    for entry in reversed(entries[:position]):
        if entry.kind == "message" and entry.label == "user":
            return frozenset(
                kind for pattern, kinds in _INTERROGATIVES for kind in kinds
                if pattern.search(entry.text)
            )  # fmt: skip
    return frozenset()


def _answer(entries: Sequence[Entry], position: int) -> set[str]:
    """The stems of what a participant said first after an output ("Then the pools must fit
    under that.")."""
    for entry in entries[position + 1 :]:
        if entry.kind == "tool_output":
            break
        if entry.kind == "message":
            return _stems(key_words(entry.text))
    return set()


def _answered(entries: Sequence[Entry], position: int) -> bool:
    """A participant spoke after the output, before the next output: it was read."""
    for entry in entries[position + 1 :]:
        if entry.kind == "tool_output":
            return False
        if entry.kind == "message":
            return True
    return False


def _compound(field: OutputField, stems: set[str]) -> bool:
    """Two of the asked-for stems inside one of the field's words: "rate limiter" in
    "fix(ratelimit)"."""
    words = key_words(" ".join(field.cells or (field.value,)))
    return any(sum(stem in word for stem in stems if len(word) > len(stem)) >= 2 for word in words)


def _chosen(
    fields: Sequence[OutputField], position: int, uses: _Uses, entries: Sequence[Entry]
) -> list[tuple[OutputField, bool]]:
    """The fields the conversation used (True), or a few it only acknowledged (False)."""
    distinct, grouped, shared = _distinct(fields)
    question = _question(entries, position)
    key_stems = [_stems(key_words(field.key)) for field in fields]
    local = question | _answer(entries, position)
    named = _named(entries, position)
    used = [
        any(uses.named_after(mark, position) for mark in _marks(field))
        or (field.row and bool(_marks(field) & named))
        or bool(near & local)
        or (not field.row and any(uses.said.get(s, -1) > position for s in stems & keys))
        or (not field.key and _compound(field, local))
        for field, stems, near, keys in zip(fields, distinct, grouped, key_stems, strict=True)
    ]
    if any(used):
        return [(field, True) for field, hit in zip(fields, used, strict=True) if hit]
    rows = [field for field in fields if field.row]
    ends = list(dict.fromkeys([rows[0], rows[-1]])) if rows else []
    if shared & question:  # one row of many was asked for: the first and the last
        return [(row, True) for row in ends]
    asked = _asked_types(entries, position)
    typed = [f for f in fields if not f.row and asked & value_types(f.value)] if asked else []
    if 0 < len(typed) <= _TYPED_FIELDS:  # "Who picked up #482?": the one person in it
        return [(field, True) for field in typed]
    if _answered(entries, position):
        marked = [field for field in fields if _marks(field) and not field.row]
        return [(field, False) for field in marked[:_ACKNOWLEDGED_FIELDS]]
    return []


def _silent(fields: Sequence[OutputField], chosen: Sequence[OutputField]) -> list[OutputField]:
    """The keyed values of a small output nobody used: a config read again may show that a
    value stated earlier changed, even when nobody says so."""
    if len(fields) > _SILENT_FIELDS:
        return []
    return [field for field in fields if field.key and not field.row and field not in chosen]


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
        listing = call is None or call.call_id not in paths
        asked = call.text if call else ""
        fields = [  # an echo of the call's own arguments says nothing new
            field
            for field in fields_of(entry.text, asked, listing=listing)
            if field.value and field.value not in asked
        ]
        if not fields:
            continue
        source = _source(call, paths)
        chosen = _chosen(fields, position, uses, entries)
        silent = [(field, False) for field in _silent(fields, [field for field, _ in chosen])]
        found.extend(
            (
                position,
                ToolFact(
                    _subject(source, field), field.value, hit, bool(field.key), index >= len(chosen)
                ),
            )
            for index, (field, hit) in enumerate([*chosen, *silent])
        )
    return found
