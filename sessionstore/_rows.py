"""The row model: what a `messages` or `sessions` row is once read, and what an append writes.

Shared by the store, the backends' hot paths and compaction, so none of them reaches
into another for a type.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter, itemgetter
from typing import Any, TypeVar

from ._errors import CorruptRowError
from ._frozen import frozen
from ._items import SLICE_CHARS, ItemInfo
from ._schema import KIND_ITEM, KIND_TOMBSTONE, VISIBLE_KINDS

_RowT = TypeVar("_RowT", bound=Sequence[Any])  # a SQLAlchemy Row or an asyncpg Record
_T = TypeVar("_T")


@frozen
class StoredRow:
    """One row of `messages`, with its payload decoded."""

    session_id: str
    seq: int
    kind: str
    role: str | None
    item_type: str | None
    tool_name: str | None
    call_id: str | None
    tokens: int
    protected: bool
    ref_seq: int | None
    compaction_id: int | None
    archive_id: int | None
    item: dict[str, Any] | None
    created_at: datetime
    # The payload's JSON text as stored (None for rows built without it): a compaction's
    # archive reuses it instead of encoding every replaced item again.
    payload: str | None = field(default=None, repr=False, compare=False)
    # The agent that produced the item (a multi-agent run); None for user input, markers and
    # summaries, and when the writer did not say.
    agent: str | None = None

    @property
    def visible(self) -> bool:
        """Whether this kind of row can be part of the context handed to a model."""
        return self.kind in VISIBLE_KINDS


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One row of `sessions`."""

    session_id: str
    created_at: datetime
    updated_at: datetime
    last_seq: int
    context_start_seq: int
    context_tokens: int
    context_items: int
    compaction_count: int
    token_encoding: str | None
    parent_session_id: str | None = None  # a branch's parent (SessionStore.fork)
    fork_seq: int | None = None  # the parent's seq the branch was forked at


def decode_payload(payload: object) -> dict[str, Any]:
    """SQLite hands back JSON text, asyncpg an already-decoded value; items are dicts (a
    row edited outside sessionstore may hold anything: CorruptRowError, never a bare
    ValueError or a list passed off as an item)."""
    decoded = payload
    if isinstance(payload, str):
        try:
            decoded = json.loads(payload)
        except json.JSONDecodeError as error:  # its message names a position, never the text
            raise CorruptRowError(f"invalid JSON: {error}") from None
    if type(decoded) is not dict:
        raise CorruptRowError(f"a JSON {type(decoded).__name__}, not an object")
    return decoded


def decode_payloads(payloads: list[Any]) -> list[dict[str, Any]]:
    """Decode many payloads; JSON texts are parsed a run at a time (5x faster than one by
    one), each run about SLICE_CHARS long: one parse of a 100,000-item context held the GIL,
    and so stalled the event loop, for 170 ms (issue #34)."""
    decoded: list[dict[str, Any]] = []
    start = size = 0
    for end, payload in enumerate(payloads, 1):
        size += len(payload) if isinstance(payload, str) else SLICE_CHARS
        if size >= SLICE_CHARS:
            decoded += _decode_run(payloads[start:end])
            start, size = end, 0
    return decoded + _decode_run(payloads[start:]) if start < len(payloads) else decoded


def _decode_run(payloads: list[Any]) -> list[dict[str, Any]]:
    """A run of payloads decoded in one parse when all are JSON texts.

    A text that is not one JSON object (SQLite stores whatever it is given: `{...},{...}`
    written by another tool) would shift its neighbours' items in the joined parse: then every
    payload is decoded alone, and the bad one fails on its own."""
    if len(payloads) > 1 and all(isinstance(payload, str) for payload in payloads):
        with contextlib.suppress(ValueError):
            decoded: list[dict[str, Any]] = json.loads("[" + ",".join(payloads) + "]")
            if len(decoded) == len(payloads) and all(type(item) is dict for item in decoded):
                return decoded
    return [decode_payload(payload) for payload in payloads]


def visible_in_order(rows: Sequence[_RowT]) -> list[_RowT]:
    """Rows shaped (seq, kind, ref_seq, ...) that are items, minus those a tombstone hides."""
    return _visible(rows, itemgetter(0), itemgetter(1), itemgetter(2))


def visible_rows(rows: Iterable[StoredRow]) -> list[StoredRow]:
    """The rows a model would see: visible kinds, minus those a tombstone hides."""
    return _visible(list(rows), attrgetter("seq"), attrgetter("kind"), attrgetter("ref_seq"))


def _visible(
    rows: Sequence[_T],
    seq: Callable[[_T], Any],
    kind: Callable[[_T], Any],
    ref_seq: Callable[[_T], Any],
) -> list[_T]:
    """The one rule for which rows a model sees, on rows of either shape (no shaped copy of
    10,000 rows for the collector to walk)."""
    hidden = {ref_seq(row) for row in rows if kind(row) == KIND_TOMBSTONE}
    return [row for row in rows if kind(row) in VISIBLE_KINDS and seq(row) not in hidden]


@dataclass(frozen=True, slots=True)
class Batch:
    """Items validated, described and counted: everything an append writes."""

    session_id: str
    payloads: list[str]
    infos: list[ItemInfo]
    counts: list[int]
    protected: bool
    encoding: str
    token: str
    agent: str | None = None  # the agent that produced every item of the batch

    def rows(self, first: int) -> list[dict[str, Any]]:
        """The `messages` rows of the batch by column name, numbered from seq `first`
        (before sealing and chaining add their columns)."""
        return [
            {
                "session_id": self.session_id,
                "seq": first + offset,
                "kind": KIND_ITEM,
                "role": info.role,
                "item_type": info.item_type,
                "tool_name": info.tool_name,
                "call_id": info.call_id,
                "tokens": count,
                "protected": self.protected or info.protected,
                "payload": payload,
                "append_token": None if offset else self.token,
                "agent": self.agent,
            }
            for offset, (payload, info, count) in enumerate(
                zip(self.payloads, self.infos, self.counts, strict=True)
            )
        ]

    @property
    def upsert_params(self) -> dict[str, Any]:
        """Parameters of the session upsert that numbers the batch."""
        return {
            "sid": self.session_id,
            "count": len(self.payloads),
            "tokens": sum(self.counts),
            "encoding": self.encoding,
        }
