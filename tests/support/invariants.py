"""The DESIGN.md invariants of a stored session, checked from the outside after any workload.

Each check reads the database the way an auditor would (rows, counters, archives, events)
and fails with a message naming the session and what broke, so soak and property tests can
call `assert_session_invariants` after every run instead of re-deriving the rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from sessionstore import SessionStore
from sessionstore._items import answered_call, calls_in, text_of
from sessionstore._rows import StoredRow, visible_rows
from sessionstore._schema import KIND_CARRY, KIND_CLEAR, KIND_ITEM, archive_ranges, compactions
from sessionstore._security._archive_sealing import OpenedArchive
from sessionstore.archive import read_archives

Item = Mapping[str, Any]
SUMMARY_MARK = "<COMPACT-SUMMARY v"
# Every committed compaction writes these events, linked to its compactions row.
COMPACTION_EVENTS = frozenset(
    {
        "compact.trigger_decision",
        "compact.pruned_messages",
        "compact.policy_applied",
        "compact.archival",
    }
)


def assert_tool_pairs_intact(context: Sequence[Item], history: Sequence[Item]) -> None:
    """No output without its call before it; no call in the context without its outputs.

    `history` is every item ever appended: a call whose output exists anywhere must have
    that output next to it in the context (pairs are kept or summarized together).
    """
    for index, item in enumerate(context):
        answered = answered_call(item)
        if answered is not None:
            earlier = [call for prior in context[:index] for call in calls_in(prior)]
            assert answered in earlier, f"output of {answered!r} has no earlier call in context"
    answered_ids = {answered_call(item) for item in context}
    outputs_anywhere = {answered_call(item) for item in history} - {None}
    for item in context:
        for call_id in calls_in(item):
            if call_id in outputs_anywhere:
                assert call_id in answered_ids, f"call {call_id!r} is in context without output"


def assert_protected_kept(context: Sequence[Item], protected: Sequence[Item]) -> None:
    """Every protected item is still in the active context, unchanged."""
    for item in protected:
        assert item in context, f"protected item dropped from the context: {text_of(item)[:80]!r}"


def assert_at_most_one_summary(context: Sequence[Item], compaction_count: int) -> None:
    """Exactly one summary once a summarizing compaction happened; never two."""
    summaries = [text_of(item) for item in context if text_of(item).startswith(SUMMARY_MARK)]
    assert len(summaries) <= 1, f"{len(summaries)} summaries in one context"
    if summaries:
        version = _version(summaries[0])
        assert version <= compaction_count, (version, compaction_count)


async def _ancestor_version(store: SessionStore, session_id: str | None, upto: int) -> int:
    """The highest summary version in the rows a branch shares: its ancestors' histories up
    to the fork (0 for a root session)."""
    if session_id is None:
        return 0
    info = await store.session_info(session_id)
    assert info is not None, f"the parent {session_id!r} is gone"
    versions = [
        _version(text_of(row.item))
        for row in await store.history(session_id)
        if row.seq <= upto and row.item is not None and text_of(row.item).startswith(SUMMARY_MARK)
    ]
    above = await _ancestor_version(store, info.parent_session_id, info.fork_seq or 0)
    return max([above, *versions])


def _version(summary: str) -> int:
    """The N of a `<COMPACT-SUMMARY vN>` marker."""
    return int(summary[len(SUMMARY_MARK) :].split(">", 1)[0])


def _origin(row: StoredRow) -> int:
    return row.ref_seq if row.kind == KIND_CARRY and row.ref_seq is not None else row.seq


async def _compaction_rows(store: SessionStore, session_id: str) -> list[Any]:
    async with store.engine.connect() as conn:
        found = await conn.execute(
            sa.select(compactions)
            .where(compactions.c.session_id == session_id)
            .order_by(compactions.c.version)
        )
        return list(found)


async def _members(store: SessionStore, session_id: str) -> dict[int, set[int]]:
    async with store.engine.connect() as conn:
        found = await conn.execute(
            sa.select(
                archive_ranges.c.archive_id, archive_ranges.c.first_seq, archive_ranges.c.last_seq
            ).where(archive_ranges.c.session_id == session_id)
        )
        members: dict[int, set[int]] = {}
        archived: set[int] = set()  # runs never overlap within a session (retention relies on it)
        for archive_id, first, last in found:
            seqs = range(int(first), int(last) + 1)
            assert archived.isdisjoint(seqs), f"{session_id}: overlapping archive runs"
            archived.update(seqs)
            members.setdefault(int(archive_id), set()).update(seqs)
        return members


async def _event_names(store: SessionStore, session_id: str) -> dict[int | None, list[str]]:
    async with store.engine.connect() as conn:
        found = await conn.execute(
            sa.text("SELECT compaction_id, event FROM events WHERE session_id = :sid ORDER BY id"),
            {"sid": session_id},
        )
        names: dict[int | None, list[str]] = {}
        for compaction_id, event in found:
            names.setdefault(compaction_id, []).append(str(event))
        return names


def _start_before(
    history: Sequence[StoredRow], start: int, previous: int, compaction_id: int
) -> int:
    """Where the context that a compaction starting at `start` replaced began (a clear the
    compaction wrote itself, as a branch's first one does, starts nothing)."""
    clears = [
        row.seq
        for row in history
        if row.kind == KIND_CLEAR
        and previous <= row.seq < start
        and row.compaction_id != compaction_id
    ]
    return clears[-1] + 1 if clears else previous


def _assert_compaction_lossless(
    history: Sequence[StoredRow],
    compaction: Any,
    replaced_from: int,
    archive: OpenedArchive,
    members: set[int],
    first: int = 1,
) -> None:
    """Every row that left the context in this compaction is in its archive, unchanged."""
    snapshot = visible_rows(
        row for row in history if replaced_from <= row.seq < compaction.context_start_seq
    )
    carried = {
        _origin(row)
        for row in history
        if row.compaction_id == compaction.id and row.seq >= compaction.context_start_seq
    }
    records = {int(record["seq"]): record for record in archive.records}
    label = f"compaction v{compaction.version}"
    for row in snapshot:
        if _origin(row) in carried:
            continue
        record = records.get(row.seq)
        assert record is not None, f"{label}: row {row.seq} left the context but is not archived"
        assert record["item"] == row.item, f"{label}: archived copy of row {row.seq} differs"
    assert set(records) <= {row.seq for row in snapshot}, f"{label}: archive holds foreign rows"
    own = {seq for seq in records if seq >= first}  # a parent's rows stay the parent's
    assert members == own, f"{label}: archive_ranges disagree with the archive"
    assert archive.from_seq == min(records) and archive.to_seq == max(records), label


async def assert_compactions_lossless(
    store: SessionStore,
    session_id: str,
    history: Sequence[StoredRow],
    *,
    first: int = 1,
    inherited: Sequence[StoredRow] = (),
) -> int:
    """Each compaction: versions 1..n, archived what it replaced, and its events were recorded.

    Truncated tool outputs have their full original in a truncation archive. Returns the
    number of compactions checked. A branch's own rows begin at `first`; its first
    compaction may also replace the parent rows it `inherited` (archived, not members).
    """
    rows = await _compaction_rows(store, session_id)
    assert [row.version for row in rows] == list(range(1, len(rows) + 1)), "version gap"
    archives = {opened.archive_id: opened for opened in await read_archives(store, session_id)}
    by_compaction = {opened.compaction_id: opened for opened in archives.values()}
    members = await _members(store, session_id)
    names = await _event_names(store, session_id)
    previous = first
    for compaction in rows:
        archive = by_compaction.get(compaction.id)
        assert archive is not None, f"compaction v{compaction.version} has no archive"
        replaced_from = _start_before(
            history, compaction.context_start_seq, previous, compaction.id
        )
        shared = list(inherited) if replaced_from == first else []
        _assert_compaction_lossless(
            [*shared, *history],
            compaction,
            min([replaced_from, *(row.seq for row in shared)]),
            archive,
            members.get(archive.archive_id, set()),
            first,
        )
        recorded = set(names.get(compaction.id, []))
        expected = set(COMPACTION_EVENTS)
        if compaction.status == "summarized":
            expected.add("compact.summary_created")
        assert expected <= recorded, f"v{compaction.version} events missing: {expected - recorded}"
        previous = compaction.context_start_seq
    for row in history:
        if row.kind == KIND_ITEM and row.archive_id is not None:
            original = archives[row.archive_id]
            assert original.reason == "truncation", f"row {row.seq} points at a non-truncation"
            [record] = original.records
            assert record["seq"] == row.seq and record["item"]["call_id"] == row.call_id
    return len(rows)


async def assert_session_invariants(
    store: SessionStore,
    session_id: str,
    *,
    protected: Sequence[Item] = (),
    loaded: Sequence[Item] | None = None,
) -> list[dict[str, Any]]:
    """Check every observable invariant of one session; returns its active context.

    `protected` items must still be in the context; `loaded` (what an SDK session's
    `get_items()` returned) must equal the stored context.
    """
    context = await store.load_context(session_id)
    history = await store.history(session_id)
    info = await store.session_info(session_id)
    assert info is not None, f"session {session_id!r} has no sessions row"
    first = (info.fork_seq or 0) + 1  # a branch numbers its own rows on from its fork
    seqs = [row.seq for row in history]
    assert seqs == list(range(first, first + len(seqs))), f"{session_id}: seq is not gapless"
    assert info.last_seq == first - 1 + len(seqs), f"{session_id}: last_seq {info.last_seq}"
    inherited: list[StoredRow] = []
    if info.parent_session_id is not None:  # read through the parent, as of the fork
        _, shared = await store.rows_as_of(info.parent_session_id, first - 1)
        inherited = [*shared]
    own = [row for row in history if row.seq >= info.context_start_seq]
    active = visible_rows([*inherited, *own] if info.context_start_seq == first else own)
    assert [row.item for row in active] == context, f"{session_id}: context != visible rows"
    assert info.context_items == len(context), f"{session_id}: context_items counter drifted"
    recomputed = sum(row.tokens for row in active)
    assert info.context_tokens == recomputed, (
        f"{session_id}: context_tokens {info.context_tokens} != recomputed {recomputed}"
    )
    for row in history:
        if row.kind == KIND_ITEM and row.item is not None:
            assert row.tokens == store.estimator.count_item(row.item), f"row {row.seq} tokens"

    appended = [row.item for row in history if row.kind == KIND_ITEM and row.item is not None]
    assert_tool_pairs_intact(context, appended)
    assert_protected_kept(context, protected)
    checked = await assert_compactions_lossless(
        store, session_id, history, first=first, inherited=inherited
    )
    assert info.compaction_count == checked, f"{session_id}: compaction_count drifted"
    # A branch counts its own compactions; a summary it shares (or a rewind restored from the
    # shared range) carries the number an ancestor gave it.
    ancestors = await _ancestor_version(store, info.parent_session_id, first - 1)
    assert_at_most_one_summary(context, info.compaction_count + ancestors)
    if loaded is not None:
        assert list(loaded) == context, f"{session_id}: the SDK session sees another context"
    return context
