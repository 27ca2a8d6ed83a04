"""The store's reads of a session's active context, whole or its newest rows, a branch's
inherited rows included.

Each is a plain function over one `Connection`, run by the backend's `Database`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._history._time_travel import (
    Segment,
    inherited_rows,
    inherited_segments,
)
from .._rows import (
    SessionInfo,
    StoredRow,
    decode_payloads,
    visible_in_order,
)
from .._schema import (
    KIND_TOMBSTONE,
    VISIBLE_KINDS,
    messages,
    sessions,
)
from .._security._payload_sealing import SessionKeys
from .._storage._row_sql import (
    ROW_COLUMNS,
    AnyRow,
    seq_range,
    stored_rows,
)

_sid: Final = sa.bindparam("sid", type_=sa.Text)
start_seq = (
    sa.select(sessions.c.context_start_seq).where(sessions.c.session_id == _sid).scalar_subquery()
)


_CONTEXT_COLUMNS: Final = (
    messages.c.seq,
    messages.c.kind,
    messages.c.ref_seq,
    messages.c.payload,
    messages.c.payload_sealed,
)


_ACTIVE_ASC: Final = (
    sa.select(*_CONTEXT_COLUMNS)
    .where(messages.c.session_id == _sid, messages.c.seq >= start_seq)
    .order_by(messages.c.seq)
)


_CONTEXT_RANGE: Final = seq_range(*_CONTEXT_COLUMNS)


_RANGE_DESC: Final = (
    seq_range(*_CONTEXT_COLUMNS, messages.c.tokens)
    .order_by(None)
    .order_by(messages.c.seq.desc())
    .limit(sa.bindparam("window"))
)


_ACTIVE_DESC: Final = (
    sa.select(*_CONTEXT_COLUMNS)
    .where(messages.c.session_id == _sid, messages.c.seq >= start_seq)
    .order_by(messages.c.seq.desc())
    .limit(sa.bindparam("window"))
)


_ACTIVE_ROWS: Final = (
    sa.select(*ROW_COLUMNS)
    .where(messages.c.session_id == _sid, messages.c.seq >= start_seq)
    .order_by(messages.c.seq)
)


_ACTIVE_LAST: Final = (  # the newest `tail` rows of the context, newest first
    sa.select(*ROW_COLUMNS)
    .where(messages.c.session_id == _sid, messages.c.seq >= start_seq)
    .order_by(messages.c.seq.desc())
    .limit(sa.bindparam("tail"))
)


HISTORY: Final = (
    sa.select(*ROW_COLUMNS).where(messages.c.session_id == _sid).order_by(messages.c.seq)
)


CONTEXT_TOKENS: Final = sa.select(sessions.c.context_tokens).where(sessions.c.session_id == _sid)


METADATA: Final = sa.select(sessions.c.metadata).where(sessions.c.session_id == _sid)


def visible_payloads(
    conn: Connection, keys: SessionKeys, session_id: str, rows: Sequence[AnyRow]
) -> list[Any]:
    """Payloads of the visible rows (unsealed as needed)."""
    plain = keys.opener(conn, session_id)
    return [plain(row.seq, row.payload, row.payload_sealed) for row in visible_in_order(rows)]


def decoded_visible(records: Sequence[Any]) -> list[dict[str, Any]]:
    """The items of the visible rows among driver records (seq, kind, ref_seq, payload, ...)."""
    return decode_payloads([record["payload"] for record in visible_in_order(records)])


def newest_rows(
    conn: Connection, segments: Sequence[Segment], limit: int, hidden: set[int]
) -> list[tuple[str, Any]]:
    """(owner, row) of the newest `limit` visible rows of `segments` (ranges of a context,
    oldest first), newest first: each range read backwards in growing windows. `hidden`
    holds the seqs newer pops hide; it grows with the tombstones met on the way."""
    picked: list[tuple[str, Any]] = []
    for owner, first, last in reversed(segments):
        window, upper = max(limit, 16), last
        while upper >= first and len(picked) < limit:
            params = {"sid": owner, "first": first, "last": upper, "window": window}
            rows = conn.execute(_RANGE_DESC, params).all()
            for row in rows:
                if row.kind == KIND_TOMBSTONE:
                    hidden.add(row.ref_seq)
                elif row.kind in VISIBLE_KINDS and row.seq not in hidden:
                    picked.append((owner, row))
                    if len(picked) == limit:
                        return picked
            if len(rows) < window:
                break
            upper, window = rows[-1].seq - 1, window * 4
    return picked


def opened(conn: Connection, keys: SessionKeys, found: Sequence[tuple[str, Any]]) -> list[Any]:
    """The payloads of (owner, row) pairs, each opened with its owner's key (one key read
    per owner)."""
    openers = {owner: keys.opener(conn, owner) for owner in {owner for owner, _ in found}}
    return [openers[owner](row.seq, row.payload, row.payload_sealed) for owner, row in found]


def read_active(conn: Connection, session_id: str, keys: SessionKeys) -> list[dict[str, Any]]:
    segments = inherited_segments(conn, session_id)
    rows = conn.execute(_ACTIVE_ASC, {"sid": session_id}).all()
    if not segments:
        return decode_payloads(visible_payloads(conn, keys, session_id, rows))
    # A branch: its ancestors' shared ranges, then its own rows, each opened by its owner.
    shaped: list[tuple[Any, ...]] = []
    for owner, first, last in segments:
        shared = conn.execute(_CONTEXT_RANGE, {"sid": owner, "first": first, "last": last})
        plain = keys.opener(conn, owner)
        shaped += [(row.seq, row.kind, row.ref_seq, plain, row) for row in shared]
    plain = keys.opener(conn, session_id)
    shaped += [(row.seq, row.kind, row.ref_seq, plain, row) for row in rows]
    return decode_payloads(
        [
            plain(row.seq, row.payload, row.payload_sealed)
            for *_, plain, row in visible_in_order(shaped)
        ]
    )


def read_context_rows(
    conn: Connection, session_id: str, keys: SessionKeys, tail: int | None
) -> list[StoredRow]:
    """Every row of the active context (or its last `tail`), a branch's inherited parent
    rows first. A tail reads only its own rows while the session holds enough of them."""
    if tail is not None:
        found = conn.execute(_ACTIVE_LAST, {"sid": session_id, "tail": tail}).all()
        if len(found) == tail:
            return stored_rows(conn, keys, session_id, found[::-1])
    own = read_rows(conn, _ACTIVE_ROWS, session_id, keys)
    rows = inherited_rows(conn, session_id, keys) + own
    return rows if tail is None else rows[-tail:]


def read_tail(
    conn: Connection, session_id: str, limit: int, keys: SessionKeys
) -> list[dict[str, Any]]:
    window = limit
    while True:
        rows = conn.execute(_ACTIVE_DESC, {"sid": session_id, "window": window}).all()
        visible = visible_payloads(conn, keys, session_id, rows)
        if len(visible) >= limit or len(rows) < window:
            break
        window *= 2
    newest = visible[:limit][::-1]
    if len(newest) < limit and (segments := inherited_segments(conn, session_id)):
        hidden = {row.ref_seq for row in rows if row.kind == KIND_TOMBSTONE}
        older = newest_rows(conn, segments, limit - len(newest), hidden)[::-1]
        return decode_payloads(opened(conn, keys, older) + newest)
    return decode_payloads(newest)


def read_rows(
    conn: Connection, statement: sa.Select[Any], session_id: str, keys: SessionKeys
) -> list[StoredRow]:
    return stored_rows(conn, keys, session_id, conn.execute(statement, {"sid": session_id}))


def read_first(
    conn: Connection, statement: sa.Select[Any], params: dict[str, Any]
) -> AnyRow | None:
    return conn.execute(statement, params).first()


def read_all(conn: Connection, statement: sa.Select[Any]) -> list[AnyRow]:
    return list(conn.execute(statement).all())


def session_info_of(row: AnyRow) -> SessionInfo:
    values = row._mapping
    return SessionInfo(**{name: values[name] for name in SessionInfo.__slots__})
