"""Rows as the pages show them: what each row is, who wrote it, its text (redacted).

Every text that reaches a template passes through the store's redactor here; the
templates' `finalize` redacts and neutralizes once more, so a forgotten field still
cannot show a secret or act on the page.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final, Protocol

from sessionstore import CorruptRowError, Redactor, StoredRow, decode_payload, text_of

from ._queries import RawRow

LONG_CHARS: Final = 600  # longer texts start collapsed (<details>)
PREVIEW_CHARS: Final = 160


@dataclass(frozen=True, slots=True)
class Entry:
    """One row of a timeline."""

    session_id: str
    seq: int
    kind: str
    label: str
    css: str
    role: str | None
    agent: str | None
    tool_name: str | None
    text: str
    preview: str
    long: bool
    tokens: int
    created_at: datetime
    ref_seq: int | None
    compaction_id: int | None
    turn: int | None = None  # set on the user message that starts a turn
    masked: bool = False
    shared: bool = False  # a parent's row this branch shares


def _label(kind: str, role: str | None, item_type: str | None, tool: str | None) -> tuple[str, str]:
    if kind == "summary":
        return ("compaction summary", "summary")
    if kind == "carry":
        return ("kept verbatim (carried)", "carry")
    if kind == "tombstone":
        return ("popped", "marker")
    if kind == "clear":
        return ("cleared / rewound", "marker")
    if item_type == "function_call" or (item_type or "").endswith("_call"):
        return (f"tool call {tool or ''}".strip(), "call")
    if (item_type or "").endswith("_output"):
        return (f"tool output {tool or ''}".strip(), "output")
    if item_type == "reasoning":
        return ("reasoning", "reasoning")
    return (role or item_type or kind, role if role in ("user", "assistant", "system") else "other")


def _text(item: Mapping[str, Any] | None, redactor: Redactor) -> str:
    if item is None:
        return ""
    return redactor.text(text_of(redactor.value(dict(item))))


class _Row(Protocol):
    """What the timeline reads of a row: a RawRow the viewer paged, or a StoredRow."""

    @property
    def session_id(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def role(self) -> str | None: ...
    @property
    def item_type(self) -> str | None: ...
    @property
    def tool_name(self) -> str | None: ...
    @property
    def tokens(self) -> int: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def ref_seq(self) -> int | None: ...
    @property
    def compaction_id(self) -> int | None: ...
    @property
    def agent(self) -> str | None: ...


def entry(
    row: _Row, item: Mapping[str, Any] | None, redactor: Redactor, *, note: str | None = None
) -> Entry:
    """The timeline entry of one row."""
    kind, ref_seq = row.kind, row.ref_seq
    label, css = _label(kind, row.role, row.item_type, row.tool_name)
    if kind == "clear" and ref_seq is not None:
        label = f"rewound to #{ref_seq}"
    elif kind == "clear":
        label = "cleared"
    elif kind == "tombstone" and ref_seq is not None:
        label = f"popped #{ref_seq}"
    elif kind == "carry" and ref_seq is not None and row.compaction_id is None:
        label = f"copy of #{ref_seq} (rewind)"
    elif kind == "carry" and ref_seq is not None:
        label = f"kept verbatim: copy of #{ref_seq}"
    text = note if note is not None else _text(item, redactor)
    flat = " ".join(text.split())
    return Entry(
        session_id=row.session_id,
        seq=row.seq,
        kind=kind,
        label=redactor.text(label),
        css=css,
        role=row.role,
        agent=None if row.agent is None else redactor.text(row.agent),
        tool_name=None if row.tool_name is None else redactor.text(row.tool_name),
        text=text,
        preview=flat[:PREVIEW_CHARS] + ("…" if len(flat) > PREVIEW_CHARS else ""),
        long=len(text) > LONG_CHARS or text.count("\n") > 12,
        tokens=row.tokens,
        created_at=row.created_at,
        ref_seq=ref_seq,
        compaction_id=row.compaction_id,
    )


def from_raw(row: RawRow, redactor: Redactor, sealed: Mapping[int, StoredRow]) -> Entry:
    """The entry of a row the viewer paged itself; a sealed row's item comes from `sealed`
    (the store opened it), a purged one says so."""
    item: dict[str, Any] | None = None
    note = None
    if row.payload is not None:
        try:
            item = decode_payload(row.payload)
        except CorruptRowError as error:
            note = f"[unreadable row: {error}]"
    elif row.sealed:
        opened = sealed.get(row.seq)
        item = opened.item if opened is not None else None
        note = None if item is not None else "[sealed: no key to open it]"
    elif row.kind in ("item", "carry", "summary"):
        note = "[payload purged by retention]"
    return entry(row, item, redactor, note=note)


def from_stored(row: StoredRow, redactor: Redactor) -> Entry:
    """The entry of a row the store read (time travel, a model call's input)."""
    return entry(row, row.item, redactor)


def numbered(entries: Iterable[Entry], first_turn: int) -> list[Entry]:
    """Entries (oldest first) with each user message numbered as the turn it starts."""
    shown: list[Entry] = []
    turn = first_turn
    for item in entries:
        if item.kind == "item" and item.role == "user":
            turn += 1
            item = replace(item, turn=turn)
        shown.append(item)
    return shown
