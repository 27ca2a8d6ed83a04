"""Write a compaction in ONE transaction, with a compare-and-swap on the session.

The summary was made outside any lock (it can take seconds). Under the session
lock we check that the covered prefix is unchanged: the same context start and
no pop of a covered row since the snapshot. Items appended meanwhile are carried
forward after the kept ones, so nothing is lost or reordered. Then the new
active context (pinned copies, the <COMPACT-SUMMARY vN> marker, kept copies, late
items), the compactions row, the archive of the replaced originals and the
events are written together. The archive is encoded and compressed before, off the lock:
the replaced rows are immutable and the compare-and-swap proves they are still the ones
the plan covered; only sealing it (bound to the compaction's id) happens inside.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._errors import StoreError
from .._events import Event
from .._history._time_travel import shares_parent_rows
from .._items import encode_payload
from .._ranges import spans
from .._rows import StoredRow, visible_rows
from .._schema import (
    KIND_CARRY,
    KIND_CLEAR,
    KIND_SUMMARY,
    KIND_TOMBSTONE,
    archive_ranges,
    archived_to,
    archives,
    compactions,
    events,
    sessions,
    summary_marker,
)
from .._schema import messages as messages_table
from .._security._archive_codec import (
    ArchiveBody,
    archive_of,
    encode_archive,
    encode_line,
    encode_string,
)
from .._security._archive_sealing import archive_columns
from .._security._payload_sealing import SessionKeys
from .._storage._row_sql import (
    AnyRow,
    carried_copy,
    lock_session,
    marker_row,
    rows_after,
    write_rows,
)
from .._tokens import TokenEstimator

CountItem = Callable[[Mapping[str, Any]], int]


@dataclass(frozen=True, slots=True)
class CompactionWrite:
    """Everything a compaction writes, decided before the transaction starts."""

    session_id: str
    snapshot_start: int  # context_start_seq when the rows were read
    snapshot_last: int  # last_seq when the rows were read
    pinned: Sequence[StoredRow]
    summary_text: str | None  # None: prune-only (the prior summary, if any, is carried)
    summary_role: str
    prior_summary: StoredRow | None
    kept: Sequence[tuple[StoredRow, dict[str, Any] | None]]  # row, replacement payload
    replaced: Sequence[StoredRow]
    archive: ArchiveBody  # of `replaced`, see encode_replaced
    record: Mapping[str, Any]  # compactions columns decided by the service
    events: Sequence[Event] = field(default_factory=tuple)
    # A provider's opaque compaction item stored verbatim as the marker (instead of
    # summary_text, which then only describes it), with the tokens it is counted as.
    provider_item: ProviderItem | None = None


@dataclass(frozen=True, slots=True)
class ProviderItem:
    """An opaque marker: the provider's item as it came, its token count, and the provider
    and model it is bound to."""

    item: Mapping[str, Any]
    tokens: int
    provider: str
    model: str | None


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What the transaction wrote."""

    compaction_id: int
    version: int
    context_start_seq: int
    summary_seq: int | None
    tokens_after: int
    items_after: int
    carried_late: int
    events: tuple[Event, ...]  # as stored: linked to the compaction and its archive


def marker_tokens(estimator: TokenEstimator, text: str, opaque: ProviderItem | None) -> int:
    """A summary's tokens: a provider's item counts as the provider reported it (its
    ciphertext says nothing), our text as the estimator counts it."""
    return estimator.count_text(text) if opaque is None else opaque.tokens


def own_start(session_id: str, rows: Sequence[StoredRow]) -> int:
    """The session's context_start_seq as a snapshot of its context rows saw it: its first
    own row (a branch's context may begin with rows of its parent, numbered before its own)."""
    return next((row.seq for row in rows if row.session_id == session_id), rows[-1].seq + 1)


def archived_record(row: StoredRow) -> dict[str, Any]:
    """One archived row: where it was and what it held."""
    return {
        "seq": row.seq,
        "kind": row.kind,
        "ref_seq": row.ref_seq,
        "role": row.role,
        "item_type": row.item_type,
        "tool_name": row.tool_name,
        "tokens": row.tokens,
        "item": row.item,
    }


def archived_line(row: StoredRow) -> str:
    """`archived_record(row)` as the archive codec writes it, without building and encoding a
    dict per row: the fixed keys are formatted here, and the item is the payload text as
    stored. That text is what `encode_payload` wrote, which is the codec's own encoding of
    the item, except its ASCII form for an item holding lone surrogates (`\\u` escapes,
    which the codec writes as the characters); any text with `\\u` is encoded again."""
    item = row.payload
    if item is None or "\\u" in item:
        assert row.item is not None, f"archived row {row.seq} has no payload"
        item = encode_line(row.item)
    ref_seq = "null" if row.ref_seq is None else row.ref_seq
    return (
        f'{{"seq":{row.seq},"kind":{_string(row.kind)},"ref_seq":{ref_seq},'
        f'"role":{_string(row.role)},"item_type":{_string(row.item_type)},'
        f'"tool_name":{_string(row.tool_name)},"tokens":{row.tokens},"item":{item}}}'
    )


def _string(value: str | None) -> str:
    return "null" if value is None else encode_string(value)


def encode_replaced(
    replaced: Sequence[StoredRow], redact: Callable[[Any], Any] | None
) -> ArchiveBody:
    """The archive of the replaced rows (redacted copies with `redact_archives`); one record
    at a time, so 10,000 rows never live as 10,000 dicts."""
    if redact is None:
        return archive_of([row.seq for row in replaced], [archived_line(row) for row in replaced])
    return encode_archive(map(redact, (archived_record(row) for row in replaced)))


_ARCHIVED_TO: Final = sa.select(archived_to(sa.bindparam("sid", type_=sa.Text)))


def _insert_ranges(conn: Connection, session_id: str, seqs: list[int], archive_id: int) -> None:
    """Say which rows the archive holds: one row per run of consecutive seqs (a compaction
    replaces runs, so 10,000 rows are one or a few). A row enters an active context once,
    with a seq above every archived one, so new runs start after the session's last; one
    that does not (a database edited by hand) is refused, as the one-row-per-seq key of
    0017 refused a row archived twice: retention reads runs as disjoint."""
    runs = spans(seqs)
    archived_end = conn.execute(_ARCHIVED_TO, {"sid": session_id}).scalar()
    if archived_end is not None and runs[0][0] <= archived_end:
        raise StoreError(
            "a compaction would archive rows of the session that an archive already holds "
            "(archive_ranges overlap); nothing was written"
        )
    conn.execute(
        archive_ranges.insert(),
        [
            {
                "session_id": session_id,
                "first_seq": first,
                "last_seq": last,
                "archive_id": archive_id,
            }
            for first, last in runs
        ],
    )


def _conflicts(late: Sequence[StoredRow], snapshot_last: int) -> bool:
    """A pop of a covered row since the snapshot invalidates the plan."""
    return any(row.kind == KIND_TOMBSTONE and (row.ref_seq or 0) <= snapshot_last for row in late)


def tx_commit_compaction(
    conn: Connection, write: CompactionWrite, count_item: CountItem, keys: SessionKeys
) -> CompactionResult | None:
    """Commit the compaction, or return None if the session moved under it (retry)."""
    session: AnyRow | None = lock_session(conn, write.session_id)
    if session is None or session.context_start_seq != write.snapshot_start:
        return None
    late_rows = rows_after(conn, write.session_id, write.snapshot_last, keys)
    if _conflicts(late_rows, write.snapshot_last):
        return None
    late = visible_rows(late_rows)
    version = int(session.compaction_count) + 1
    first = int(session.last_seq) + 1
    rows: list[dict[str, Any]] = []
    if int(session.last_seq) == session.fork_seq and shares_parent_rows(
        session.fork_seq, int(session.context_start_seq)
    ):
        # A branch still sharing its parent's rows with none of its own: a clear marker first,
        # so its context start (after the marker) cannot read as "still sharing".
        rows.append(marker_row(write.session_id, first, KIND_CLEAR, None))
    start = first + len(rows)  # where the new context starts
    summary_seq: int | None = None

    def add(row: StoredRow, kind: str, item: dict[str, Any] | None = None) -> None:
        tokens = row.tokens if item is None else count_item(item)
        rows.append(
            carried_copy(
                row,
                session_id=write.session_id,
                seq=first + len(rows),
                kind=kind,
                item=item,
                tokens=tokens,
            )
        )

    for row in write.pinned:
        add(row, KIND_CARRY)
    if write.summary_text is not None or write.provider_item is not None:
        summary_seq = first + len(rows)
        rows.append(_summary_row(write, summary_seq, version, count_item))
    elif write.prior_summary is not None:  # prune-only keeps the state it had
        summary_seq = first + len(rows)
        add(write.prior_summary, KIND_SUMMARY)
    for row, replacement in write.kept:
        add(row, KIND_CARRY, replacement)
    for row in late:
        add(row, KIND_CARRY)
    tokens_after = sum(row["tokens"] for row in rows)

    compaction_id = conn.execute(
        compactions.insert()
        .values(
            session_id=write.session_id,
            version=version,
            covered_from_seq=write.archive.from_seq,
            covered_to_seq=write.archive.to_seq,
            context_start_seq=start,
            summary_seq=summary_seq,
            tokens_after=tokens_after,
            summary_tokens=rows[summary_seq - first]["tokens"] if summary_seq else None,
            **write.record,
        )
        .returning(compactions.c.id)
    ).scalar_one()
    archive_id = conn.execute(
        archives.insert()
        .values(
            reason="compaction",
            **archive_columns(
                write.archive,
                session_id=write.session_id,
                compaction_id=compaction_id,
                keyring=keys.keyring,
            ),
        )
        .returning(archives.c.id)
    ).scalar_one()
    members = [
        row.seq
        for row in write.replaced
        if row.session_id == write.session_id  # a branch's parent keeps its own rows
    ]
    if members:
        _insert_ranges(conn, write.session_id, members, archive_id)
    chained: dict[str, Any] = {}
    columns = set().union(*rows) if rows else set()  # a marker lacks the item columns
    for new_row in rows:
        new_row.update({name: None for name in columns - set(new_row)})
        new_row["compaction_id"] = compaction_id
    if rows:
        chained = write_rows(conn, keys, dict(session._mapping), rows)
        conn.execute(messages_table.insert(), rows)
    conn.execute(
        sessions.update()
        .where(sessions.c.session_id == write.session_id)
        .values(
            last_seq=first + len(rows) - 1,
            context_start_seq=start,
            context_tokens=tokens_after,
            context_items=len(rows) - (start - first),
            compaction_count=version,
            updated_at=sa.func.current_timestamp(),
            **chained,
        )
    )
    links = {"compaction_id": compaction_id, "archive_id": archive_id}
    linked = tuple(replace(event, fields={**event.fields, **links}) for event in write.events)
    if linked:
        conn.execute(events.insert(), [event.row() for event in linked])
    return CompactionResult(
        compaction_id=compaction_id,
        version=version,
        context_start_seq=start,
        summary_seq=summary_seq,
        tokens_after=tokens_after,
        items_after=len(rows) - (start - first),
        carried_late=len(late),
        events=linked,
    )


def _summary_row(
    write: CompactionWrite, seq: int, version: int, count_item: CountItem
) -> dict[str, Any]:
    role: str | None = write.summary_role
    if write.provider_item is not None:  # verbatim: only its provider can read it
        item = dict(write.provider_item.item)
        role, tokens = None, write.provider_item.tokens
    else:
        assert write.summary_text is not None
        item = {"role": role, "content": summary_marker(version, write.summary_text)}
        tokens = count_item(item)
    return {
        "session_id": write.session_id,
        "seq": seq,
        "kind": KIND_SUMMARY,
        "role": role,
        "item_type": str(item.get("type") or "message"),
        "tool_name": None,
        "call_id": None,
        "tokens": tokens,
        "protected": False,
        "ref_seq": None,
        "archive_id": None,
        "payload": encode_payload(item, 0),
    }
