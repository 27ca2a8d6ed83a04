"""The pages' data: each function reads what one page shows, through the store's public
methods and the viewer's paged SQL (`_queries`), and returns plain values for a template."""

from __future__ import annotations

import base64
import json
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from starlette.exceptions import HTTPException

from sessionstore import (
    HistoryPoint,
    ModelCall,
    Redactor,
    SessionInfo,
    SessionStore,
    StoredRow,
    visible_rows,
)
from sessionstore.archive import read_archives

from . import _queries as q
from ._charts import token_chart, token_series, usage_bars
from ._views import Entry, from_raw, from_stored, numbered

PAGE_ROWS: Final = 100
LIST_ROWS: Final = 50
TREE_LIMIT: Final = 200  # branches drawn in a session's tree


def not_found(what: str) -> HTTPException:
    """The page names a session, compaction or call that does not exist (404)."""
    return HTTPException(404, f"not found: {what}")


def bad_request(message: str) -> HTTPException:
    """A parameter the page cannot read, said in the message (400)."""
    return HTTPException(400, message)


def parse_point(text: str) -> HistoryPoint:
    """A point as the CLI's --as-of reads it (HistoryPoint.parse), or a 400 saying why."""
    try:
        return HistoryPoint.parse(text)
    except ValueError as error:
        raise bad_request(str(error)) from None


def _int(value: str | None, name: str, default: int | None = None) -> int | None:
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise bad_request(f"{name} must be a whole number, got {value!r}") from None
    if not -_LARGEST < number < _LARGEST:
        raise bad_request(f"{name} is larger than any number the store holds")
    return number


# ---------------------------------------------------------------- sessions


def _cursor(value: Any, session_id: str) -> str:
    shown = value.isoformat() if isinstance(value, datetime) else value
    raw = json.dumps([shown, session_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


_LARGEST: Final = 2**63  # a 64-bit column's bound, on both backends
# What a page link's keyset may hold for each sort (bool is an int to Python: refused).
_CURSOR_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "updated": (datetime, str),
    "items": (int,),
    "tokens": (int,),
    "cost": (int, float),
    "id": (str,),
    "branch": (str,),
}


def _uncursor(text: str, sort: str) -> tuple[Any, str]:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        value, session_id = json.loads(raw)
        if sort == "updated" and isinstance(value, str) and "T" in value:
            value = datetime.fromisoformat(value)
        typed = isinstance(value, _CURSOR_TYPES[sort]) and not isinstance(value, bool)
        if not (typed and isinstance(session_id, str)):
            raise ValueError("a cursor of another sort, or made by hand")
        if isinstance(value, int) and not -_LARGEST < value < _LARGEST:
            raise ValueError("out of range")
        return value, session_id
    except (ValueError, TypeError):
        raise bad_request("the page link is damaged: start from the first page") from None


@dataclass(frozen=True, slots=True)
class SessionList:
    """One page of the session list."""

    rows: list[q.SessionRow]
    agents: dict[str, list[str]]
    total: int
    query: str
    sort: str
    descending: bool
    next_cursor: str | None
    previous_cursor: str | None = None  # the cursor (`prev=`) of the page before this one


async def session_list(
    store: SessionStore,
    query: str,
    sort: str,
    order: str,
    after: str | None,
    before: str | None = None,
) -> SessionList:
    """A page of sessions, sorted and filtered in SQL; the page's agents and costs only.
    `after` pages forwards from a cursor, `before` backwards (the previous page)."""
    if sort not in q.SORTS:
        raise bad_request(f"sort must be one of {', '.join(q.SORTS)}")
    descending = order != "asc"
    backwards = bool(before)
    given = before or after
    cursor = _uncursor(given, sort) if given else None
    rows, keys = await store.read_snapshot(
        q.session_page,
        sort=sort,
        descending=descending,
        query=query or None,
        after=cursor,
        limit=LIST_ROWS + 1,
        backwards=backwards,
    )
    more = len(rows) > LIST_ROWS
    rows, keys = rows[:LIST_ROWS], keys[:LIST_ROWS]
    if backwards:  # nearest first: the page reads in the list's order again
        rows, keys = rows[::-1], keys[::-1]
    agents = await store.read_snapshot(
        q.agents_of, [(row.session_id, row.last_seq) for row in rows]
    )
    total = await store.read_snapshot(q.session_count, query or None)
    later = backwards or more  # backwards, the page this one came from is after it
    earlier = more if backwards else cursor is not None
    next_cursor = _cursor(keys[-1], rows[-1].session_id) if later and rows else None
    previous = _cursor(keys[0], rows[0].session_id) if earlier and rows else None
    return SessionList(rows, agents, total, query, sort, descending, next_cursor, previous)


# ---------------------------------------------------------------- lineage


async def require(store: SessionStore, session_id: str) -> SessionInfo:
    """The session's row, or a 404."""
    try:
        info = await store.session_info(session_id)
    except ValueError:
        raise not_found(session_id) from None
    if info is None:
        raise not_found(session_id)
    return info


async def lineage(store: SessionStore, info: SessionInfo) -> list[q.Segment]:
    """The rows the session's history is made of, newest segment first: its own rows, then
    its parent's up to the fork, and so on up the lineage."""
    segments: list[q.Segment] = []
    current: SessionInfo | None = info
    last = info.last_seq
    while current is not None and len(segments) < 64:
        first = (current.fork_seq + 1) if current.fork_seq is not None else 0
        segments.append(q.Segment(current.session_id, first, last))
        if current.parent_session_id is None or current.fork_seq is None:
            break
        last = current.fork_seq
        current = await store.session_info(current.parent_session_id)
    return segments


@dataclass(frozen=True, slots=True)
class TreeNode:
    """A session in its branch tree."""

    session_id: str
    fork_seq: int | None
    depth: int
    current: bool


async def branch_tree(store: SessionStore, info: SessionInfo) -> list[TreeNode]:
    """The tree the session belongs to, from its root, depth first (at most TREE_LIMIT)."""
    root = info
    for _ in range(64):
        if root.parent_session_id is None:
            break
        parent = await store.session_info(root.parent_session_id)
        if parent is None:
            break
        root = parent
    nodes: list[TreeNode] = []
    stack: list[tuple[SessionInfo, int]] = [(root, 0)]
    while stack and len(nodes) < TREE_LIMIT:
        node, depth = stack.pop()
        nodes.append(
            TreeNode(node.session_id, node.fork_seq, depth, node.session_id == info.session_id)
        )
        children = await store.branches(node.session_id)
        stack.extend((child, depth + 1) for child in reversed(children))
    return nodes


# ---------------------------------------------------------------- timeline


async def _opened_sealed(store: SessionStore, rows: list[q.RawRow]) -> dict[int, StoredRow]:
    """Items of sealed rows, opened by the store (its keyring); only when a page has any."""
    sealed = {row.session_id for row in rows if row.sealed and row.payload is None}
    opened: dict[int, StoredRow] = {}
    for session_id in sealed:
        try:
            history = await store.history(session_id)
        except Exception:  # no key: the rows say they are sealed
            continue
        opened.update({row.seq: row for row in history})
    return opened


def _new_seqs(payload: object) -> list[int]:
    seqs = payload.get("new_seqs") if isinstance(payload, dict) else None
    return [seq for seq in seqs or () if isinstance(seq, int)]


async def masked_seqs(store: SessionStore, session_id: str) -> set[int]:
    """Rows masking has sent as a placeholder in some model call (the `new_seqs` of the
    session's `compact.masked` events): masking is a view, the stored rows stay whole."""
    found = await store.read_snapshot(q.events_of, session_id, names=["compact.masked"])
    return {seq for event in found for seq in _new_seqs(event["payload"])}


def _estimated(payload: object) -> object:
    breakdown = payload.get("breakdown") if isinstance(payload, dict) else None
    return breakdown.get("messages") if isinstance(breakdown, dict) else None


async def call_masked_seqs(
    store: SessionStore, calls: Sequence[ModelCall], number: int
) -> set[int] | None:
    """The rows call `number` was sent masked, as its record says: its pre-flight estimate
    (`compact.token_estimate`, matched to the calls in order by their `input_tokens_est`, as
    `sessions show --call` matches them) and the `compact.masked` events stored before it (a
    masked output stays masked). None: its record does not say."""
    call = next(c for c in calls if c.call == number)
    found = await store.read_snapshot(
        q.events_of,
        call.session_id,
        names=["compact.token_estimate", "compact.masked"],
        limit=100_000,
    )
    estimates = [e for e in found if e["event"] == "compact.token_estimate"]
    position, cutoff = 0, None
    for earlier in calls:
        cutoff = None
        for at in range(position, len(estimates)):
            estimated = earlier.input_tokens_est
            if estimated is not None and _estimated(estimates[at]["payload"]) == estimated:
                cutoff, position = int(estimates[at]["id"]), at + 1
                break
        if earlier.call == number:
            break
    if cutoff is None:
        return None
    return {
        seq
        for e in found
        if e["event"] == "compact.masked" and int(e["id"]) < cutoff
        for seq in _new_seqs(e["payload"])
    }


@dataclass(frozen=True, slots=True)
class Timeline:
    """One page of a session's history, oldest first."""

    info: SessionInfo
    entries: list[Entry]
    older: int | None  # `before` of the next older page
    newer: int | None  # `before` of the next newer page (None: this is the newest)
    tree: list[TreeNode]
    compactions: list[dict[str, Any]]
    segments: list[q.Segment]


async def timeline(
    store: SessionStore,
    session_id: str,
    redactor: Redactor,
    *,
    before: int | None,
    around: int | None,
    size: int = PAGE_ROWS,
) -> Timeline:
    """The page of the history that ends before `before` (default: the newest page), or the
    one that holds `around`; rows a branch shares with its parent are marked."""
    info = await require(store, session_id)
    segments = await lineage(store, info)
    end = info.last_seq + 1
    if around is not None:
        before = min(end, around + size // 2)
    before = end if before is None else max(0, min(before, end))
    raw = await store.read_snapshot(q.history_page, segments, before, size)
    raw.reverse()
    opened = await _opened_sealed(store, raw)
    first_seq = raw[0].seq if raw else before
    turns_before = await store.read_snapshot(q.user_turns_before, segments, first_seq)
    masked = await masked_seqs(store, session_id)
    entries = []
    for row in raw:
        item = from_raw(row, redactor, opened)
        if row.seq in masked or row.session_id != session_id:
            item = replace(item, masked=row.seq in masked, shared=row.session_id != session_id)
        entries.append(item)
    lowest = segments[-1].first if segments else 0
    older = first_seq if raw and first_seq > max(lowest, 1) else None  # seqs start at 1
    newer = None if before >= end else min(end, before + size)
    tree = await branch_tree(store, info)
    compactions = await store.read_snapshot(q.compactions_of, session_id)
    return Timeline(
        info, numbered(entries, turns_before), older, newer, tree, compactions, segments
    )


# ---------------------------------------------------------------- tokens


async def tokens_page(store: SessionStore, session_id: str) -> dict[str, Any]:
    """The context-size chart, usage per turn (chart and table), per model, and the calls."""
    info = await require(store, session_id)
    segments = await lineage(store, info)
    steps = await store.read_snapshot(q.token_steps, segments)
    # The chart replays the lineage's rows, so it needs the lineage's compactions: a
    # branch forked after its parent compacted starts from that compaction's context.
    inherited = await store.read_snapshot(q.compactions_in, [s.session_id for s in segments])
    compactions = [c for c in inherited if c["session_id"] == session_id]
    window, share = await store.read_snapshot(q.window_of, session_id)
    chart = token_chart(token_series(steps, inherited), window, share)
    calls = await store.model_calls(session_id)
    # Turn starts from the rows already read (no user message's payload is decoded).
    user_seqs = [seq for seq, kind, role, *_ in steps if kind == "item" and role == "user"]
    per_turn: dict[int, dict[str, Any]] = {}
    for call in calls:
        # A call belongs to the turn of the newest row it was sent (as `turn_usage` counts).
        turn = 0 if call.context_to_seq is None else bisect_right(user_seqs, call.context_to_seq)
        used = per_turn.setdefault(
            turn,
            {"calls": 0, "estimated": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": None},
        )
        used["calls"] += 1
        used["estimated"] += call.input_tokens_est or 0
        used["input_tokens"] += call.input_tokens or 0
        used["output_tokens"] += call.output_tokens or 0
        if call.cost_usd is not None:
            used["cost_usd"] = (used["cost_usd"] or 0.0) + call.cost_usd
    bars, bars_w, bars_h = usage_bars(per_turn)
    by_model = await store.usage(by="model", session_id=session_id)
    return {
        "info": info,
        "chart": chart,
        "compactions": compactions,
        "window": window,
        "per_turn": sorted(per_turn.items()),
        # Where each turn starts, for the table's links into the timeline.
        "turn_seqs": {turn: user_seqs[turn - 1] for turn in per_turn if 0 < turn <= len(user_seqs)},
        "bars": bars,
        "bars_w": bars_w,
        "bars_h": bars_h,
        "by_model": by_model,
        "calls": calls,
    }


# ---------------------------------------------------------------- compaction


async def compaction_page(
    store: SessionStore,
    session_id: str,
    compaction_id: int,
    redactor: Redactor,
    start: int | None = None,
) -> dict[str, Any]:
    """What compaction `compaction_id` replaced, its summary, what it kept verbatim, the
    outputs masked, its events, and (with a key configured only) its archived originals.
    A compaction of thousands of rows is shown PAGE_ROWS replaced rows (and their archived
    originals) at a time, from seq `start`; kept rows are capped alike."""
    info = await require(store, session_id)
    found = [
        c
        for c in await store.read_snapshot(q.compactions_of, session_id)
        if int(c["id"]) == compaction_id
    ]
    if not found:
        raise not_found(f"compaction {compaction_id}")
    record = found[0]
    segments = await lineage(store, info)
    first, last = int(record["covered_from_seq"]), int(record["covered_to_seq"])
    shown_from = first if start is None else max(first, start)
    raw: list[q.RawRow] = []
    for segment in reversed(segments):  # oldest first, until a page and one more
        lo, hi = max(shown_from, segment.first), min(last, segment.last)
        if lo <= hi and len(raw) <= PAGE_ROWS:
            want = PAGE_ROWS + 1 - len(raw)
            raw += await store.read_snapshot(q.rows_in, segment.session_id, lo, hi, want)
    next_from = raw[PAGE_ROWS].seq if len(raw) > PAGE_ROWS else None
    raw = raw[:PAGE_ROWS]
    shown_to = last if next_from is None else next_from - 1
    written = await store.read_snapshot(
        q.written_by, session_id, compaction_id, int(record["context_start_seq"]), PAGE_ROWS
    )
    opened = await _opened_sealed(store, raw + written.summary + written.carried)
    masked = await masked_seqs(store, session_id)
    kept_seqs = (
        {
            int(seq)
            for layer in (record.get("kept") or {}).values()
            if isinstance(layer, list)
            for seq in layer
            if isinstance(seq, int)
        }
        if isinstance(record.get("kept"), dict)
        else set()
    )
    replaced = []
    for row in raw:
        entry = from_raw(row, redactor, opened)
        replaced.append(replace(entry, masked=row.seq in masked))
    summary = [from_raw(row, redactor, opened) for row in written.summary]
    kept = [from_raw(row, redactor, opened) for row in written.carried]
    events = [
        {**event, "payload": redactor.value(event["payload"])}
        for event in await store.read_snapshot(q.events_of, session_id, compaction_id=compaction_id)
    ]
    archives: list[dict[str, Any]] = []
    archive_note = None
    if store.keyring is None:
        archive_note = "no key is configured: archived originals are not shown"
    else:
        try:
            for archive in await read_archives(store, session_id, compaction_id=compaction_id):
                shown = [  # the originals of the rows this page shows
                    redactor.value(r)
                    for r in archive.records
                    if shown_from <= _seq_of(r) <= shown_to
                ]
                archives.append(
                    {
                        "archive_id": archive.archive_id,
                        "from_seq": archive.from_seq,
                        "to_seq": archive.to_seq,
                        "total": len(archive.records),
                        "records": shown,
                    }
                )
        except Exception as error:  # a key that cannot open it: said, not raised
            archive_note = f"the archive could not be opened: {type(error).__name__}"
    return {
        "info": info,
        "record": {
            **record,
            "note": None if record.get("note") is None else redactor.text(str(record["note"])),
        },
        "replaced": replaced,
        "shown_from": shown_from,
        "shown_to": shown_to,
        "next_from": next_from,
        "summary": summary,
        "kept": kept,
        "kept_total": written.carried_total,
        "kept_seqs": sorted(kept_seqs | written.carried_seqs),
        "events": events,
        "archives": archives,
        "archive_note": archive_note,
    }


def _seq_of(record: Any) -> int:
    """An archived record's seq (-1 for a record that names none: shown on no page)."""
    seq = record.get("seq") if isinstance(record, dict) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else -1


# ---------------------------------------------------------------- a model call


async def call_page(
    store: SessionStore, session_id: str, number: int, redactor: Redactor
) -> dict[str, Any]:
    """The exact input a model call was sent, as its record names it: the stored context up
    to `context_to_seq` (what `load_context(as_of=...)` returns) and the items sent unsaved,
    with outputs masking replaced marked."""
    info = await require(store, session_id)
    calls = await store.model_calls(session_id)
    chosen = [call for call in calls if call.call == number]
    if not chosen:
        raise not_found(f"call {number}")
    call = chosen[0]
    entries: list[Entry] = []
    unsaved: list[Entry] = []
    unknown_masking = False
    if call.context_to_seq is not None:
        _, rows = await store.rows_as_of(session_id, HistoryPoint.at_seq(call.context_to_seq))
        known = await call_masked_seqs(store, calls, number)
        masked = known or set()
        unknown_masking = known is None and call.input_tokens_est != sum(
            row.tokens for row in visible_rows(rows)
        )
        entries = [
            replace(from_stored(row, redactor), masked=row.seq in masked)
            for row in visible_rows(rows)
        ]
        if call.unsaved_items:
            later = await store.read_snapshot(
                q.rows_in,
                session_id,
                call.context_to_seq + 1,
                call.context_to_seq + call.unsaved_items,
            )
            opened = await _opened_sealed(store, later)
            unsaved = [from_raw(row, redactor, opened) for row in later]
    return {
        "info": info,
        "call": call,
        "entries": entries,
        "unsaved": unsaved,
        "unknown_masking": unknown_masking,
    }


# ---------------------------------------------------------------- time travel


async def as_of_page(
    store: SessionStore, session_id: str, point_text: str, redactor: Redactor
) -> dict[str, Any]:
    """The active context as a load returned it at a point (seq, version, turn or time)."""
    info = await require(store, session_id)
    point = parse_point(point_text)
    try:
        seq, rows = await store.rows_as_of(session_id, point)
    except ValueError as error:
        raise bad_request(str(error)) from None
    entries = [from_stored(row, redactor) for row in visible_rows(rows)]
    compactions = await store.read_snapshot(q.compactions_of, session_id)
    user_turns = await store.user_turns(session_id)
    return {
        "info": info,
        "point": point_text,
        "seq": seq,
        "entries": entries,
        "tokens": sum(entry.tokens for entry in entries),
        "versions": [int(c["version"]) for c in compactions],
        "turns": [turn.turn for turn in user_turns],
    }


# ---------------------------------------------------------------- search


async def search_page(
    store: SessionStore, query: str, session_id: str | None, redact: bool
) -> list[dict[str, Any]]:
    """Hits of the full-text index, best first, each with its timeline link's seq."""
    if not query.strip():
        return []
    try:
        hits = await store.search(query, session_id=session_id or None, limit=50, redact=redact)
    except ValueError as error:
        raise bad_request(str(error)) from None
    return [
        {
            "session_id": hit.session_id,
            "seq": hit.seq,
            "kind": hit.kind,
            "role": hit.role,
            "tool_name": hit.tool_name,
            "created_at": hit.created_at,
            "snippet": hit.snippet,
        }
        for hit in hits
    ]
